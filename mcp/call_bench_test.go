package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/internal/testserver"
)

// BenchmarkEchoCallStdio measures an echo tools/call over stdio on each
// revision against mcp-testserver --replay, which answers both at the same
// speed (the answers mcp-testserver gave on each revision, recorded once):
// what differs is what FreeCode does with each revision's messages. It
// reports FreeCode's CPU per call (this process's user and system time;
// the server is another process) besides the wall time. The sub-benchmark
// alternating calls both sessions in turns of 200 calls, so that a shared
// machine's changing load hits both alike, and reports the ratio of their
// CPU per call (modern/legacy).
func BenchmarkEchoCallStdio(b *testing.B) {
	revisions := []struct {
		name, protocol string
		modern         bool
	}{{"legacy", ProtocolVersion, false}, {"modern", ModernProtocolVersion, true}}
	var sessions []*Session
	for _, rev := range revisions {
		sessions = append(sessions, replaySession(b, rev.protocol, rev.modern))
	}
	ctx := context.Background()
	args := json.RawMessage(`{"text":"hello"}`)
	echo := func(s *Session) {
		if _, err := s.CallTool(ctx, "echo", args, nil); err != nil {
			b.Fatal(err)
		}
	}
	for i, rev := range revisions {
		b.Run(rev.name, func(b *testing.B) {
			b.ReportAllocs()
			before := cpuTime(b)
			b.ResetTimer()
			for range b.N {
				echo(sessions[i])
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime(b)-before).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
	b.Run("alternating", func(b *testing.B) {
		const turn = 200
		var cpu [2]time.Duration
		for done := 0; done < b.N; done += turn {
			n := min(turn, b.N-done)
			for k := range 2 {
				k = (k + done/turn) % 2 // who goes first changes each turn
				start := cpuTime(b)
				for range n {
					echo(sessions[k])
				}
				cpu[k] += cpuTime(b) - start
			}
		}
		legacy, modern := float64(cpu[0].Microseconds())/float64(b.N), float64(cpu[1].Microseconds())/float64(b.N)
		b.ReportMetric(legacy, "legacy-cpu-µs/op")
		b.ReportMetric(modern, "modern-cpu-µs/op")
		b.ReportMetric(modern/legacy, "modern/legacy")
	})
}

// replaySession connects mcp-testserver --replay with the answers
// mcp-testserver gave on protocol (modern: 2026-07-28), closed at the end
// of the benchmark.
func replaySession(b *testing.B, protocol string, modern bool) *Session {
	command := []string{testServerBin}
	if modern {
		command = append(command, "--modern")
	}
	answers, err := testserver.RecordAnswers(context.Background(), command, modern)
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(b.TempDir(), "answers.json")
	raw, err := json.Marshal(answers)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	srv := localServer("replay", "--replay", file)
	srv.Protocol = protocol
	s, err := Connect(context.Background(), srv, Options{Logger: logr.Discard()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if s.Protocol() != protocol {
		b.Fatalf("spoke %s, want %s", s.Protocol(), protocol)
	}
	if _, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"hello"}`), nil); err != nil {
		b.Fatal(err)
	}
	return s
}

// cpuTime is this process's user and system time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
