package mcp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLineRing(t *testing.T) {
	tests := []struct {
		name    string
		cap     int
		add     int
		want    []string
		dropped int
	}{
		{"empty", 3, 0, []string{}, 0},
		{"partial", 3, 2, []string{"l0", "l1"}, 0},
		{"exactly full", 3, 3, []string{"l0", "l1", "l2"}, 0},
		{"wrapped", 3, 7, []string{"l4", "l5", "l6"}, 4},
		{"capacity one", 1, 5, []string{"l4"}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLineRing(tt.cap)
			for i := range tt.add {
				r.add(fmt.Sprintf("l%d", i))
			}
			require.Equal(t, tt.want, r.tail())
			require.Equal(t, tt.dropped, r.dropped())
		})
	}
}

func TestLineRingTruncatesLongLines(t *testing.T) {
	r := newLineRing(2)
	r.add(strings.Repeat("x", 3*maxLineBytes))
	got := r.tail()
	require.Len(t, got, 1)
	require.Equal(t, strings.Repeat("x", maxLineBytes)+"…", got[0])
}

// Reading by number gets each line once, however often its text repeats
// and however far the ring wrapped.
func TestLineRingAfter(t *testing.T) {
	tests := []struct {
		name      string
		cap, add  int
		after     int64
		want      []string
		wantLast  int64
		lineTexts func(i int) string
	}{
		{name: "empty", cap: 3, after: 0, want: []string{}, wantLast: 0},
		{name: "all", cap: 3, add: 2, after: 0, want: []string{"l0", "l1"}, wantLast: 2},
		{name: "after the first", cap: 3, add: 3, after: 1, want: []string{"l1", "l2"}, wantLast: 3},
		{name: "nothing new", cap: 3, add: 3, after: 3, want: []string{}, wantLast: 3},
		{name: "wrapped, reader kept up", cap: 3, add: 7, after: 5, want: []string{"l5", "l6"}, wantLast: 7},
		{name: "wrapped past the reader", cap: 3, add: 7, after: 1, want: []string{"l4", "l5", "l6"}, wantLast: 7},
		{name: "cursor ahead stays", cap: 3, add: 2, after: 9, want: []string{}, wantLast: 9},
		{name: "identical lines", cap: 4, add: 10, after: 8, want: []string{"same", "same"}, wantLast: 10,
			lineTexts: func(int) string { return "same" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLineRing(tt.cap)
			for i := range tt.add {
				text := fmt.Sprintf("l%d", i)
				if tt.lineTexts != nil {
					text = tt.lineTexts(i)
				}
				r.add(text)
			}
			got, last, _ := r.after(tt.after)
			require.Equal(t, tt.want, LineTexts(got))
			require.Equal(t, tt.wantLast, last)
		})
	}
}

func TestLineRingAfterWakes(t *testing.T) {
	r := newLineRing(2)
	_, last, wake := r.after(0)
	require.Zero(t, last)
	select {
	case <-wake:
		t.Fatal("woken without a line")
	default:
	}
	_, _, again := r.after(0)
	require.Equal(t, wake, again, "readers between two lines share one channel")
	r.add("x")
	<-wake // closed by the line
	got, last, next := r.after(last)
	require.Equal(t, []string{"x"}, LineTexts(got))
	require.Equal(t, int64(1), last)
	select {
	case <-next:
		t.Fatal("a fresh channel is closed only by the next line")
	default:
	}
	r.add("x")
	<-next
	got, last, _ = r.after(last)
	require.Equal(t, []string{"x"}, LineTexts(got), "the same text again is a new line")
	require.Equal(t, int64(2), last)
}

// Log messages are numbered with the stderr lines, in one order, but
// stay out of what errors quote of stderr.
func TestLineRingMessages(t *testing.T) {
	r := newLineRing(4)
	r.add("err 1")
	r.addMessage(LogLine{Text: "[info] hello", Message: &LogMessage{Level: "info"}})
	require.False(t, r.lastLine().IsZero())
	r.add("err 2")
	afterErr2 := time.Now()
	r.addMessage(LogLine{Text: "[info] again", Message: &LogMessage{Level: "info"}})
	got, last, _ := r.after(0)
	require.Equal(t, []string{"err 1", "[info] hello", "err 2", "[info] again"}, LineTexts(got))
	require.Equal(t, int64(4), last)
	require.Nil(t, got[0].Message)
	require.Equal(t, "info", got[1].Message.Level)
	require.Equal(t, []string{"err 1", "err 2"}, r.tail())
	require.False(t, r.lastLine().After(afterErr2), "the start meter sees stderr lines only")
}
