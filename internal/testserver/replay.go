package testserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Answers are a server's recorded answers by method: each the answer's
// "result" or its "error", as the server sent it.
type Answers map[string]Answer

// Answer is one recorded answer: exactly one of Result and Error is set.
type Answer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// maxReplayLine bounds a request line Replay reads.
const maxReplayLine = 1 << 20

// Replay serves the answers recorded in file (Answers, JSON) over stdio
// until in ends or ctx does: each request (a line with an id) is answered
// at once with the answer recorded for its method, under its id, or with
// method-not-found (but subscriptions/listen, which is held open
// unanswered, as a server holds the stream); notifications are read and
// dropped. It does no other
// work, so that the same process answers two recordings (two protocol
// revisions of one server, say) at the same speed: what a client spends on
// each is then its own.
func Replay(ctx context.Context, file string, in io.Reader, out io.Writer) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	var answers Answers
	if err := json.Unmarshal(b, &answers); err != nil {
		return fmt.Errorf("replay: %s: %w", file, err)
	}
	notFound := Answer{Error: json.RawMessage(`{"code":-32601,"message":"Method not found"}`)}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxReplayLine)
	w := bufio.NewWriter(out)
	for sc.Scan() && ctx.Err() == nil {
		id, method := idAndMethod(sc.Bytes())
		if len(id) == 0 || method == "" {
			continue // a notification, an answer, or not JSON-RPC
		}
		a, ok := answers[method]
		switch {
		case !ok && method == "subscriptions/listen":
			// A 2026-07-28 client's stream of notifications: a server
			// holds it open, and so does the replay (it never sends one).
			continue
		case !ok:
			a = notFound
		}
		w.WriteString(`{"jsonrpc":"2.0","id":`)
		w.Write(id)
		if a.Error != nil {
			w.WriteString(`,"error":`)
			w.Write(a.Error)
		} else {
			w.WriteString(`,"result":`)
			w.Write(a.Result)
		}
		w.WriteString("}\n")
		if err := w.Flush(); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	return nil
}

// idAndMethod reads a request line's "id" and "method" members, token by
// token, and stops once it has both: what comes after them (the params of
// a request as FreeCode, through mcp-go, encodes it) is not read, so that
// the time to answer does not grow with what a request carries. A line that is not an object gives neither.
func idAndMethod(line []byte) (id json.RawMessage, method string) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, ""
	}
	for dec.More() && (id == nil || method == "") {
		k, err := dec.Token()
		if err != nil {
			return nil, ""
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, ""
		}
		switch k {
		case "id":
			id = v
		case "method":
			if json.Unmarshal(v, &method) != nil {
				return nil, ""
			}
		}
	}
	return id, method
}

// The revisions RecordAnswers speaks.
const (
	modernRevision = "2026-07-28"
	legacyRevision = "2025-11-25"
)

// RecordAnswers starts command and asks it over stdio, as a client of the
// revision (2026-07-28 when modern, else 2025-11-25) would and as raw
// JSON-RPC, what a FreeCode session asks: the handshake, the lists and an
// echo call. It returns the answers by method, as Replay takes them. The
// server has 10 s and 1 MiB a line.
func RecordAnswers(ctx context.Context, command []string, modern bool) (Answers, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
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
			"io.modelcontextprotocol/protocolVersion":    modernRevision,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "freecode-bench", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
		requests = append(requests, map[string]any{"method": "server/discover", "params": map[string]any{"_meta": meta}})
	} else {
		requests = append(requests,
			map[string]any{"method": "initialize", "params": map[string]any{"protocolVersion": legacyRevision, "capabilities": map[string]any{},
				"clientInfo": map[string]any{"name": "freecode-bench", "version": "1"}}},
			map[string]any{"method": "notifications/initialized"})
	}
	for _, m := range []string{"tools/list", "resources/list", "resources/templates/list", "prompts/list"} {
		requests = append(requests, map[string]any{"method": m, "params": map[string]any{"_meta": meta}})
	}
	requests = append(requests, map[string]any{"method": "tools/call", "params": map[string]any{"name": "echo", "arguments": map[string]any{"text": "hello"}, "_meta": meta}})
	methods := map[string]string{} // id → method
	enc := json.NewEncoder(stdin)
	for i, r := range requests {
		r["jsonrpc"] = "2.0"
		if !strings.HasPrefix(r["method"].(string), "notifications/") {
			id := strconv.Itoa(i + 1)
			r["id"] = i + 1
			methods[id] = r["method"].(string)
		}
		if err := enc.Encode(r); err != nil {
			return nil, err
		}
	}
	answers := Answers{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for len(answers) < len(methods) && sc.Scan() {
		var resp struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Answer
		}
		if json.Unmarshal(sc.Bytes(), &resp) != nil || resp.Method != "" {
			continue // a notification or a request of the server's
		}
		if m, ok := methods[string(resp.ID)]; ok {
			answers[m] = resp.Answer
		}
	}
	if len(answers) < len(methods) {
		return nil, fmt.Errorf("it answered %d of %d requests (%v)", len(answers), len(methods), errors.Join(sc.Err(), ctx.Err()))
	}
	if a := answers["tools/call"]; a.Result == nil {
		return nil, fmt.Errorf("echo failed: %s", a.Error)
	}
	return answers, nil
}
