package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoffDelay(t *testing.T) {
	b := DefaultBackoff()
	cases := []struct {
		name     string
		failures int
		r        float64
		want     time.Duration
	}{
		{"first failure, no jitter drawn", 1, 0, 500 * time.Millisecond},
		{"count below one counts as one", 0, 0, 500 * time.Millisecond},
		{"second doubles", 2, 0, time.Second},
		{"fifth", 5, 0, 8 * time.Second},
		{"capped", 7, 0, 30 * time.Second},
		{"capped for huge counts", 10000, 0, 30 * time.Second},
		{"full jitter shortens by 20%", 1, 1, 400 * time.Millisecond},
		{"half jitter", 2, 0.5, 900 * time.Millisecond},
		{"jitter never exceeds the cap", 50, 0.999, time.Duration(float64(30*time.Second) * (1 - 0.2*0.999))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, b.delay(tc.failures, tc.r))
		})
	}
}

func TestBackoffGrowsUntilCap(t *testing.T) {
	b := DefaultBackoff()
	// Worst case for growth: the previous delay unjittered, the next one
	// fully jittered.
	for n := 1; b.delay(n, 0) < b.Max; n++ {
		require.Greater(t, b.delay(n+1, 0.999999), b.delay(n, 0), "failure %d", n)
	}
}

func TestBackoffDefaults(t *testing.T) {
	require.Equal(t, DefaultBackoff(), Backoff{}.withDefaults())
	got := Backoff{Initial: 10 * time.Millisecond, Max: time.Millisecond, Factor: 0.5, Jitter: -1}.withDefaults()
	require.Equal(t, 10*time.Millisecond, got.Max, "Max is at least Initial")
	require.Equal(t, 2.0, got.Factor)
	require.Zero(t, got.Jitter, "negative jitter means none")
	require.Equal(t, 10*time.Millisecond, got.delay(3, 0.5))
}
