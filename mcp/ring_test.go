package mcp

import (
	"fmt"
	"strings"
	"testing"

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
