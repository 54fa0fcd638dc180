package serve

import (
	"testing"
	"time"
)

func TestCallStatsWindowPercentilesAndBound(t *testing.T) {
	var s callStats
	now := time.Now()
	// An old call falls out of the window but stays in the totals.
	s.add("a", now.Add(-statsWindow-time.Minute), time.Hour, true)
	for i := 1; i <= 100; i++ {
		s.add("a", now, time.Duration(i)*time.Millisecond, i%10 == 0)
	}
	c := s.of("a", now)
	if c.Calls != 100 || c.Errors != 10 || c.P50MS != 50 || c.P95MS != 95 || c.Total != 101 || c.TotalErrors != 11 {
		t.Fatalf("stats %+v", c)
	}
	// The ring keeps the last statsSamples calls only.
	for range 2 * statsSamples {
		s.add("a", now, time.Millisecond, false)
	}
	if c := s.of("a", now); c.Calls != statsSamples || c.P95MS != 1 {
		t.Fatalf("after many calls: %+v", c)
	}
	if s.of("b", now) != nil {
		t.Fatal("a server without calls has numbers")
	}
	s.forget(func(string) bool { return false })
	if s.of("a", now) != nil {
		t.Fatal("a forgotten server keeps its numbers")
	}
}
