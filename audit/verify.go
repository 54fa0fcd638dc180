package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Verification is what Verify found.
type Verification struct {
	// Records counts the lines read; First and Last are the first and
	// last records' Seq.
	Records     int
	First, Last uint64
	// Rotated says the log starts after record 1: the records before were
	// rotated away (which a cut of the oldest lines looks like too).
	Rotated bool
	// Problems are the breaks in the chain, in the order of the log.
	Problems []Problem
}

// Problem is one break of the chain, at a line of a file.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message) }

// OK reports whether the chain is whole.
func (v Verification) OK() bool { return len(v.Problems) == 0 }

// Verify checks every line against the one before: each must be a record
// whose Prev is the hash of the line before and whose Seq follows it, and
// the last must be the head. A removed line shows as a jump of Seq (and
// Prev); an edited line as the next line's Prev not matching it, or, for
// the last line, as the head not matching it; lines cut from the end as
// the head naming a later record. Rotation keeps the chain: the first
// record of a file follows the last of the file before.
func (s *Store) Verify(ctx context.Context) (Verification, error) {
	var (
		entries []Entry
		h       head
		herr    error
	)
	err := s.locked(ctx, false, func() error {
		var err error
		if entries, err = s.read(); err != nil {
			return err
		}
		h, herr = s.readHead()
		return nil
	})
	if err != nil {
		return Verification{}, err
	}
	return verify(entries, h, herr), nil
}

func verify(entries []Entry, h head, herr error) Verification {
	var v Verification
	add := func(e Entry, format string, args ...any) {
		v.Problems = append(v.Problems, Problem{File: e.File, Line: e.Line, Message: fmt.Sprintf(format, args...)})
	}
	var prev *Entry
	for i := range entries {
		e := entries[i]
		v.Records++
		if e.Err != nil {
			add(e, "not a record: the line was edited or damaged")
			prev = &entries[i]
			continue
		}
		switch {
		case prev == nil:
			v.First = e.Seq
			if e.Seq != 1 || e.Prev != "" {
				v.Rotated = true
			}
		case prev.Err != nil:
			// Reported already; the chain resumes here.
		case e.Seq > prev.Seq+1:
			add(e, "records %d to %d are missing: removed from the log", prev.Seq+1, e.Seq-1)
		case e.Seq <= prev.Seq:
			add(e, "record %d follows record %d: records were reordered, copied or edited", e.Seq, prev.Seq)
		case e.Prev != prev.Hash:
			add(e, "does not follow the line before (record %d): that line was edited, or this one", prev.Seq)
		}
		v.Last = e.Seq
		prev = &entries[i]
	}
	switch {
	case herr != nil && errors.Is(herr, os.ErrNotExist) && len(entries) == 0:
		// An empty log.
	case herr != nil:
		v.Problems = append(v.Problems, Problem{File: headName, Message: "missing or malformed: whether records were cut from the end cannot be told"})
	case prev == nil:
		v.Problems = append(v.Problems, Problem{File: headName, Message: fmt.Sprintf("names record %d, but the log is empty: every record was removed", h.Seq)})
	case prev.Err == nil && h.Seq > prev.Seq:
		add(*prev, "the log ends at record %d but record %d was written: the records after it were cut", prev.Seq, h.Seq)
	case h.Seq == prev.Seq && h.Hash != prev.Hash:
		add(*prev, "the last record is not the one written: it was edited")
	case prev.Err == nil && h.Seq < prev.Seq:
		add(*prev, "the log goes past its last written record %d: records were added by hand", h.Seq)
	}
	return v
}
