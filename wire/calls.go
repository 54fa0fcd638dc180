package wire

import "time"

// CallStats are a server's tool calls, those that reached it: over the
// recent window (Calls, Errors and the durations' percentiles, of at most
// the last 1024 calls within WindowSeconds) and since serve started
// (Total, TotalErrors). An error is a call that failed or whose result
// the server marked isError.
type CallStats struct {
	Calls         int    `json:"calls"`
	Errors        int    `json:"errors"`
	P50MS         int64  `json:"p50Ms"`
	P95MS         int64  `json:"p95Ms"`
	WindowSeconds int    `json:"windowSeconds"`
	Total         uint64 `json:"total"`
	TotalErrors   uint64 `json:"totalErrors"`
}

// AuditStatus is the audit log's state in this process: its file, the
// records written and lost, and the last failure to write ("" when the
// last write worked). A failure never fails a call.
type AuditStatus struct {
	Path    string    `json:"path"`
	Written uint64    `json:"written"`
	Lost    uint64    `json:"lost,omitempty"`
	Error   string    `json:"error,omitempty"`
	ErrorAt time.Time `json:"errorAt,omitzero"`
}
