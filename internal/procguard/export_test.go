package procguard

// NewReaperWithFallback is NewHelperReaper with the helper at path.
func NewReaperWithFallback(path, fallback string, sub *Subreaper) *Reaper {
	return &Reaper{path: path, fallback: fallback, sub: sub}
}
