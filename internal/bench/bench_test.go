package bench

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMedian(t *testing.T) {
	require.Equal(t, time.Duration(0), median(nil))
	require.Equal(t, 2*time.Millisecond, median([]time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond}))
	require.Equal(t, 2500*time.Microsecond, median([]time.Duration{4 * time.Millisecond, time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}))
	require.Equal(t, 1.5, medianF([]float64{2, 1}))
}

func TestParseBench(t *testing.T) {
	out := `goos: linux
BenchmarkCallOverhead/raw-mcp-go-2         	   4000	    272612 ns/op
BenchmarkCallOverhead/orchestrator-2       	   3000	    309211.5 ns/op	 1176 B/op	13 allocs/op
BenchmarkCallOverhead/raw-mcp-go-2         	   4000	    280000 ns/op
BenchmarkAuthorizedCall/authorized-2         	   4000	    100 ns/op
BenchmarkAuthorizedCall/authorized#01-2      	   4000	    110 ns/op
BenchmarkAuthorizedCall/authorized#12        	   4000	    120 ns/op
PASS
`
	got, err := parseBench(strings.NewReader(out))
	require.NoError(t, err)
	require.Equal(t, map[string][]time.Duration{
		"BenchmarkCallOverhead/raw-mcp-go":   {272612, 280000},
		"BenchmarkCallOverhead/orchestrator": {309211},
		"BenchmarkAuthorizedCall/authorized": {100, 110, 120},
	}, got)
}

func TestWriteTableEscapesAndGroups(t *testing.T) {
	var b bytes.Buffer
	WriteTable(&b, []Row{{Group: "g", Name: "a|b", Value: "1"}, {Group: "g", Name: "c", Runs: 3}})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 4)
	require.Equal(t, `| g | a\|b | 1 |  |  |  |  |  |  |`, lines[2])
	require.Equal(t, `|  | c |  |  |  |  |  |  | 3 |`, lines[3])
}

func TestProcCPUAndRSSOfSelf(t *testing.T) {
	_, err := procCPU(1 << 30)
	require.Error(t, err)
	self := os.Getpid()
	_, err = procCPU(self)
	require.NoError(t, err)
	rss, err := procRSS(self)
	require.NoError(t, err)
	require.Greater(t, rss, uint64(1<<20))
}

func TestParseMetrics(t *testing.T) {
	in := "goos: linux\nBenchmarkConnectNpm/memory-2   \t       5\t 441234567 ns/op\t       210.5 pinned-ms\t       214.0 negotiated-ms\t         3.100 probe-ms\nPASS\n"
	got, err := parseMetrics(strings.NewReader(in))
	require.NoError(t, err)
	require.Equal(t, map[string]map[string][]float64{"BenchmarkConnectNpm/memory": {
		"iterations": {5}, "ns/op": {441234567}, "pinned-ms": {210.5}, "negotiated-ms": {214}, "probe-ms": {3.1},
	}}, got)
}

func TestSchedCPUAndSmapsOfSelf(t *testing.T) {
	_, err := schedCPU(1 << 30)
	require.Error(t, err)
	_, err = smapsRollup(1 << 30)
	require.Error(t, err)
	self := os.Getpid()
	cpu, err := schedCPU(self)
	require.NoError(t, err)
	require.Positive(t, cpu)
	m, err := smapsRollup(self)
	require.NoError(t, err)
	require.Greater(t, m["Rss"], uint64(1<<20))
	require.Greater(t, m["Anonymous"], uint64(0))
	require.LessOrEqual(t, m["Pss"], m["Rss"])
}

func TestMemOfTreeOfSelf(t *testing.T) {
	m, err := memOfTree(os.Getpid())
	require.NoError(t, err)
	require.GreaterOrEqual(t, m.procs, 1)
	require.Greater(t, m.rss, uint64(1<<20))
	_, err = memOfTree(1 << 30)
	require.Error(t, err)
}
