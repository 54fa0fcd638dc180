package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	answers, err := recordReplayAnswers(context.Background(), []string{testServerBin}, modern)
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

// recordReplayAnswers asks command, a stdio server, over raw JSON-RPC what
// a FreeCode session asks (the handshake, the lists, an echo call) and
// returns its answers by method, for mcp-testserver --replay. modern asks
// as a 2026-07-28 client: server/discover first, no initialize, and the
// protocol's _meta on every request.
func recordReplayAnswers(ctx context.Context, command []string, modern bool) (testserver.Answers, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if modern {
		command = append(command, "--modern")
	}
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	meta := map[string]any{}
	var requests []map[string]any
	if modern {
		meta = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    ModernProtocolVersion,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "freecode-bench", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
		requests = append(requests, map[string]any{"method": "server/discover", "params": map[string]any{"_meta": meta}})
	} else {
		requests = append(requests,
			map[string]any{"method": "initialize", "params": map[string]any{"protocolVersion": ProtocolVersion, "capabilities": map[string]any{},
				"clientInfo": map[string]any{"name": "freecode-bench", "version": "1"}}},
			map[string]any{"method": "notifications/initialized"})
	}
	requests = append(requests,
		map[string]any{"method": "tools/list", "params": map[string]any{"_meta": meta}},
		map[string]any{"method": "tools/call", "params": map[string]any{"name": "echo", "arguments": map[string]any{"text": "hello"}, "_meta": meta}})
	methods := map[string]string{} // id → method
	enc := json.NewEncoder(stdin)
	for i, r := range requests {
		r["jsonrpc"] = "2.0"
		if !strings.HasPrefix(r["method"].(string), "notifications/") {
			r["id"] = i + 1
			methods[strconv.Itoa(i+1)] = r["method"].(string)
		}
		if err := enc.Encode(r); err != nil {
			return nil, err
		}
	}
	answers := testserver.Answers{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for len(answers) < len(methods) && sc.Scan() {
		var resp struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			testserver.Answer
		}
		if json.Unmarshal(sc.Bytes(), &resp) != nil || resp.Method != "" {
			continue // a notification or a request of the server's
		}
		if m, ok := methods[string(resp.ID)]; ok {
			answers[m] = resp.Answer
		}
	}
	if len(answers) < len(methods) {
		return nil, fmt.Errorf("it answered %d of %d requests (%v, %v)", len(answers), len(methods), sc.Err(), ctx.Err())
	}
	if a := answers["tools/call"]; a.Result == nil {
		return nil, fmt.Errorf("echo failed: %s", a.Error)
	}
	return answers, nil
}
