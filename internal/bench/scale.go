package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/bridge"
	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/wire"
)

// ScaleOptions configure Scale.
type ScaleOptions struct {
	Reps int
	// Servers × the test server's generated tools (ServerArgs must make it
	// generate ToolsPerServer tools, e.g. --tools 100 --schemas mixed).
	Servers, ToolsPerServer int
	ServerArgs              []string
}

// noCalls is the Caller of registered tools: Scale never calls them.
type noCalls struct{}

func (noCalls) CallTool(context.Context, string, json.RawMessage, func(wire.Progress)) (*wire.CallResult, error) {
	return nil, errors.New("not callable in the scale benchmark")
}

// captureTools lists the test server once through mcp.Session and returns
// its generated tools' raw tools/list elements.
func captureTools(ctx context.Context, argv []string) ([]json.RawMessage, error) {
	sess, err := mcp.Connect(ctx, controller.MCPSpec(localServer("capture", argv)), mcp.Options{Logger: logr.Discard()})
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	var out []json.RawMessage
	for _, raw := range sess.RawTools() {
		var t struct{ Name string }
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, err
		}
		if strings.HasPrefix(t.Name, "tool_") {
			out = append(out, raw)
		}
	}
	return out, nil
}

// distinct returns raws with each input schema made unique to server by a
// "$comment", so that no two tools anywhere share a schema's bytes (the
// worst case for conversion: nothing can be reused).
func distinct(server string, raws []json.RawMessage) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(raws))
	for i, raw := range raws {
		var t map[string]json.RawMessage
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, err
		}
		schema := strings.TrimSpace(string(t["inputSchema"]))
		if !strings.HasPrefix(schema, "{") {
			return nil, fmt.Errorf("tool #%d: input schema is not an object", i)
		}
		c, _ := json.Marshal(fmt.Sprintf("%s #%d", server, i))
		t["inputSchema"] = json.RawMessage(`{"$comment":` + string(c) + `,` + strings.TrimPrefix(schema, "{"))
		b, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// scaleSample is one repetition's timings.
type scaleSample struct {
	convListed, convDistinct, register, reregister time.Duration
	defs                                           map[defs.Dialect]time.Duration
	defsWarm, defsOne                              time.Duration
	heap                                           uint64
	tools                                          int
}

var dialects = []defs.Dialect{defs.DialectJSONSchema, defs.DialectOpenAI, defs.DialectGemini}

func scaleOnce(listed [][]json.RawMessage, unique [][]json.RawMessage, names []string) (scaleSample, error) {
	s := scaleSample{defs: map[defs.Dialect]time.Duration{}}
	convert := func(in [][]json.RawMessage) ([][]mcp.Tool, time.Duration, error) {
		out := make([][]mcp.Tool, len(in))
		start := time.Now()
		for i, raws := range in {
			tools, errs := mcp.ConvertTools(names[i], raws)
			if len(errs) > 0 {
				return nil, 0, errors.Join(errs...)
			}
			out[i] = tools
		}
		return out, time.Since(start), nil
	}
	asListed, d, err := convert(listed)
	if err != nil {
		return s, err
	}
	s.convListed = d

	before := heapInUse()
	converted, d, err := convert(unique)
	if err != nil {
		return s, err
	}
	s.convDistinct = d

	reg := registry.NewRegistry(event.NewBus())
	regTools := make([][]registry.Tool, len(converted))
	for i, tools := range converted {
		regTools[i] = bridge.Tools(noCalls{}, tools)
		s.tools += len(tools)
	}
	start := time.Now()
	for i, tools := range regTools {
		if _, err := reg.ReplaceSource(names[i], tools); err != nil {
			return s, err
		}
	}
	s.register = time.Since(start)

	start = time.Now()
	for i, tools := range regTools {
		changed, err := reg.ReplaceSource(names[i], tools)
		if err != nil {
			return s, err
		}
		if changed {
			return s, fmt.Errorf("re-registering identical tools of %s reported a change", names[i])
		}
	}
	s.reregister = time.Since(start)

	cache := defs.NewDefsCache(reg, defs.Options{})
	for _, dl := range dialects {
		start := time.Now()
		defs := cache.Defs(dl)
		s.defs[dl] = time.Since(start)
		if len(defs.Problems) > 0 || len(defs.Tools) != s.tools {
			return s, fmt.Errorf("defs %s: %d tools, problems %v", dl, len(defs.Tools), defs.Problems)
		}
	}
	start = time.Now()
	for _, dl := range dialects {
		cache.Defs(dl)
	}
	s.defsWarm = time.Since(start) / time.Duration(len(dialects))
	after := heapInUse()

	// One server's tools change (its schemas lose their "$comment"): the
	// next Defs of each dialect converts that server's tools only.
	if changed, err := reg.ReplaceSource(names[0], bridge.Tools(noCalls{}, asListed[0])); err != nil || !changed {
		return s, fmt.Errorf("changing the tools of %s: changed %v, %v", names[0], changed, err)
	}
	start = time.Now()
	for _, dl := range dialects {
		cache.Defs(dl)
	}
	s.defsOne = time.Since(start)
	runtime.KeepAlive(reg)
	runtime.KeepAlive(cache)
	runtime.KeepAlive(converted)
	if after > before {
		s.heap = after - before
	}
	return s, nil
}

// Scale converts, registers and builds provider defs for Servers ×
// ToolsPerServer tools captured once from the test server.
func Scale(ctx context.Context, cfg Config, opts ScaleOptions) ([]Row, error) {
	argv := append([]string{cfg.TestServer}, opts.ServerArgs...)
	raws, err := captureTools(ctx, argv)
	if err != nil {
		return nil, fmt.Errorf("capture tools: %w", err)
	}
	if len(raws) != opts.ToolsPerServer {
		return nil, fmt.Errorf("test server listed %d generated tools, want %d", len(raws), opts.ToolsPerServer)
	}
	names := make([]string, opts.Servers)
	listed := make([][]json.RawMessage, opts.Servers)
	unique := make([][]json.RawMessage, opts.Servers)
	for i := range names {
		names[i] = fmt.Sprintf("srv%03d", i)
		listed[i] = raws
		if unique[i], err = distinct(names[i], raws); err != nil {
			return nil, err
		}
	}
	var samples []scaleSample
	for rep := range opts.Reps {
		s, err := scaleOnce(listed, unique, names)
		if err != nil {
			return nil, err
		}
		samples = append(samples, s)
		cfg.logf("  scale rep %d/%d: convert listed %s, distinct %s, register %s, heap %.1f MiB", rep+1, opts.Reps, ms(s.convListed), ms(s.convDistinct), ms(s.register), float64(s.heap)/(1<<20))
	}
	pick := func(f func(scaleSample) time.Duration) time.Duration {
		ds := make([]time.Duration, len(samples))
		for i, s := range samples {
			ds[i] = f(s)
		}
		return median(ds)
	}
	n := opts.Servers * opts.ToolsPerServer
	per := func(d time.Duration) string { return fmt.Sprintf("%s (%s/tool)", ms(d), us(d/time.Duration(n))) }
	group := fmt.Sprintf("5. scale: %d servers × %d tools (%s, in-process)", opts.Servers, opts.ToolsPerServer, strings.Join(opts.ServerArgs, " "))
	runs := len(samples)
	rows := []Row{
		{Group: group, Name: fmt.Sprintf("convert + compile validators, %d tools as listed (2 distinct schemas per server)", n), Value: per(pick(func(s scaleSample) time.Duration { return s.convListed })), Runs: runs},
		{Group: group, Name: fmt.Sprintf("convert + compile validators, %d tools, every schema distinct (worst case)", n), Value: per(pick(func(s scaleSample) time.Duration { return s.convDistinct })), Runs: runs},
		{Group: group, Name: fmt.Sprintf("registry.ReplaceSource × %d (new tools)", opts.Servers), Value: ms(pick(func(s scaleSample) time.Duration { return s.register })), Runs: runs},
		{Group: group, Name: fmt.Sprintf("registry.ReplaceSource × %d (identical re-registration: no event)", opts.Servers), Value: ms(pick(func(s scaleSample) time.Duration { return s.reregister })), Runs: runs},
	}
	var total time.Duration
	for _, dl := range dialects {
		d := pick(func(s scaleSample) time.Duration { return s.defs[dl] })
		total += d
		rows = append(rows, Row{Group: group, Name: fmt.Sprintf("DefsCache rebuild, %s", dl), Value: ms(d), Runs: runs})
	}
	rows = append(rows,
		Row{Group: group, Name: "DefsCache rebuild, all three dialects", Value: ms(total), Runs: runs},
		Row{Group: group, Name: fmt.Sprintf("DefsCache rebuild of all three dialects after one server's %d tools changed", opts.ToolsPerServer), Value: ms(pick(func(s scaleSample) time.Duration { return s.defsOne })), Runs: runs},
		Row{Group: group, Name: "DefsCache.Defs, cached (no change)", Value: us(pick(func(s scaleSample) time.Duration { return s.defsWarm })), Runs: runs},
	)
	heaps := make([]float64, len(samples))
	for i, s := range samples {
		heaps[i] = float64(s.heap) / (1 << 20)
	}
	rows = append(rows, Row{Group: group, Name: fmt.Sprintf("heap in use for %d converted tools + registry + defs of 3 dialects", n), Value: fmt.Sprintf("%.1f MiB", medianF(heaps)), Runs: runs})
	return rows, nil
}
