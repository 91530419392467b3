// The mcp-go adapter: github.com/mark3labs/mcp-go (its client package) as an MCP client.
//
//	adapter <cell.json> <observation.json>      (cwd = this directory)
//
// For `stdio` it spawns the reference server through the SDK's own stdio transport
// (transport.NewStdioWithOptions, started by Client.Start: the server is the client's child, with
// server.env added to the environment the SDK's way, appended to os.Environ()); for `http-json` /
// `http-sse` it connects to server.url through client.NewStreamableHttpClient. Then it runs
// Client.Initialize, ListTools when the variant asks for it, every call of the cell and the
// follow-up through Client.CallTool, and Client.Close; it writes what each step returned or raised
// and what the SDK logged as going wrong out of band (observe.go logHandler). Facts only
// (docs/adapters.md); the steps mirror clients/_support/mcp_driver.mjs.
//
// Protocol: mcp-go v1.2 speaks both revisions by itself. Client.Initialize first probes
// `server/discover` (the 2026-07-28 stateless core) and falls back to the `initialize` handshake
// when the server does not answer it as a modern server (client/protocol.go negotiateModern, probe
// bounded to 5 s). The adapter keeps that default under both `protocol` values of the cell, as an
// application would (no WithProtocolVersion), and records Client.ProtocolVersion().
//
// Timeouts and cancellation: mcp-go has no request-timeout setting of its own; its requests end
// with their context. Every request gets a context with a deadline of call_timeout_ms (the
// timeout an application sets); a call with cancel_after_ms has that context cancelled after so
// many ms (Go's idiomatic cancellation; the SDK then sends notifications/cancelled on stdio, and
// nothing on HTTP, client.go cancelRequest), and its record gets cancelled_after_ms.
//
// Options:
//
//	list_tools  (bool) call ListTools after Initialize
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

const (
	sdkModule = "github.com/mark3labs/mcp-go"
	// closeWait bounds Client.Close: the stdio transport waits up to 2 s after closing stdin,
	// then SIGTERM and 3 s, then SIGKILL and 3 s (transport/stdio.go Close).
	closeWait = 6 * time.Second
)

// knownOptions maps each option the adapter understands to its type (observe.mjs checkOptions).
var knownOptions = map[string]string{"list_tools": "boolean"}

var clientInfo = mcp.Implementation{Name: "mcp-client-matrix", Version: "0.1.0"}

type toolCall struct {
	Name          string          `json:"name"`
	Arguments     json.RawMessage `json:"arguments"`
	CancelAfterMs json.RawMessage `json:"cancel_after_ms"`
	cancelAfter   *time.Duration
}

type cell struct {
	CellID    string          `json:"cell_id"`
	Options   json.RawMessage `json:"options"`
	Transport string          `json:"transport"`
	Protocol  string          `json:"protocol"`
	Server    struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
		URL     *string           `json:"url"`
	} `json:"server"`
	Calls         []*toolCall `json:"calls"`
	Followup      *toolCall   `json:"followup"`
	CallTimeoutMs float64     `json:"call_timeout_ms"`
	BudgetMs      int64       `json:"budget_ms"`
}

func main() {
	if len(os.Args) != 3 {
		fail("usage: adapter <cell.json> <observation.json>")
	}
	c, err := readCell(os.Args[1])
	if err != nil {
		fail(err.Error())
	}
	options, err := checkOptions(c.Options)
	if err != nil {
		fail(err.Error())
	}
	switch c.Transport {
	case "stdio":
	case "http-json", "http-sse":
		if c.Server.URL == nil {
			fail(fmt.Sprintf("transport %s needs server.url", c.Transport))
		}
	default:
		fail(fmt.Sprintf("transport %q is not supported (stdio, http-json, http-sse)", c.Transport))
	}

	var child serverChild
	r := newRun(c, os.Args[2], packageVersion(), runtime.Version(), child.kill)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		name := map[os.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}[<-signals]
		r.abort("received " + name)
	}()

	logger := slog.New(&logHandler{run: r, echo: slog.NewTextHandler(os.Stderr, nil)})
	slog.SetDefault(logger) // the client package logs to the default logger
	drive(c, options, r, logger, &child)
}

// drive runs the steps of one session (mcp_driver.mjs drive) and finishes the run.
func drive(c *cell, options map[string]any, r *run, logger *slog.Logger, child *serverChild) {
	timeout := time.Duration(c.CallTimeoutMs * float64(time.Millisecond))

	initStep := r.begin("initialize", "")
	r.place(func(o *observation) { o.Initialize = initStep })
	mc, err := connect(c, logger, child, timeout)
	protocol := func() *string {
		if mc == nil || mc.ProtocolVersion() == "" {
			return nil
		}
		v := mc.ProtocolVersion()
		return &v
	}
	r.settle(initStep, func(s *step) {
		s.protocolVersion = protocol()
		if err != nil {
			s.err = errorRecord(err)
		} else {
			s.status = "ok"
		}
	})

	if err == nil {
		if options["list_tools"] == true {
			list := r.begin("list_tools", "")
			r.place(func(o *observation) { o.ListTools = list })
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			listed, err := mc.ListTools(ctx, mcp.ListToolsRequest{})
			cancel()
			r.settle(list, func(s *step) {
				if err != nil {
					s.err = errorRecord(err)
					return
				}
				s.status, s.tools = "ok", []string{}
				for _, tool := range listed.Tools {
					s.tools = append(s.tools, tool.Name)
				}
			})
		}
		for _, call := range c.Calls {
			callStep(r, mc, call, timeout, func(o *observation, s *step) { o.Calls = append(o.Calls, s) })
		}
		callStep(r, mc, c.Followup, timeout, func(o *observation, s *step) { o.Followup = s })
	}

	reason := "finished"
	if mc != nil {
		closing := r.begin("close", "")
		r.place(func(o *observation) { o.Close = closing })
		done := make(chan struct{})
		go func() {
			err := mc.Close()
			r.settle(closing, func(s *step) {
				if err != nil {
					s.err = errorRecord(err)
				} else {
					s.status = "ok"
				}
			})
			close(done)
		}()
		wait := max(0, min(closeWait, r.untilDeadline()-200*time.Millisecond))
		select {
		case <-done:
		case <-time.After(wait):
			child.kill()
			reason = fmt.Sprintf("close wait bound of %d ms", wait.Milliseconds())
		}
	}
	r.finish(reason)
}

// connect makes the SDK's client for the cell's transport, starts it (stdio: spawns the server)
// and initializes it. The client is returned even when starting or initializing failed, so that
// it can be closed.
func connect(c *cell, logger *slog.Logger, child *serverChild, timeout time.Duration) (*client.Client, error) {
	var mc *client.Client
	if c.Transport == "stdio" {
		env := make([]string, 0, len(c.Server.Env))
		for k, v := range c.Server.Env {
			env = append(env, k+"="+v)
		}
		sort.Strings(env)
		stdio := transport.NewStdioWithOptions(c.Server.Command, env, c.Server.Args,
			transport.WithCommandLogger(logger), transport.WithCommandFunc(child.command))
		mc = client.NewClient(stdio)
	} else {
		var err error
		mc, err = client.NewStreamableHttpClient(*c.Server.URL, transport.WithHTTPLogger(logger))
		if err != nil {
			return nil, err
		}
	}
	// Start's context is the transport's lifetime (the stdio child is bound to it with
	// exec.CommandContext): a background one, as client.NewStdioMCPClient uses.
	if err := mc.Start(context.Background()); err != nil {
		return mc, err
	}
	child.started()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err := mc.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: clientInfo}})
	return mc, err
}

// callStep makes one CallTool and records it (mcp_driver.mjs callStep). The call's context has
// the call timeout; with cancel_after_ms it is also cancelled that many ms after the call started.
func callStep(r *run, mc *client.Client, call *toolCall, timeout time.Duration, place func(*observation, *step)) {
	s := r.begin("call", call.Name)
	s.cancellable = call.cancelAfter != nil
	r.place(func(o *observation) { place(o, s) })

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var (
		mu       sync.Mutex
		issuedAt *float64
	)
	if call.cancelAfter != nil {
		timer := time.AfterFunc(*call.cancelAfter, func() {
			mu.Lock()
			at := s.elapsed()
			issuedAt = &at
			mu.Unlock()
			cancel()
		})
		defer timer.Stop()
	}

	request := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: call.Name}}
	if len(call.Arguments) > 0 && !bytes.Equal(call.Arguments, []byte("null")) {
		request.Params.Arguments = call.Arguments // the cell's arguments, byte for byte
	}
	result, err := mc.CallTool(ctx, request)
	s.settled() // the duration is the call's, not the serialization's below
	var encoded json.RawMessage
	if err == nil {
		encoded = marshal(result) // the SDK's own JSON mapping (CallToolResult.MarshalJSON)
	}
	mu.Lock()
	cancelledAfter := issuedAt
	mu.Unlock()
	r.settle(s, func(s *step) {
		s.cancelledAfter = cancelledAfter
		if err != nil {
			s.err = errorRecord(err)
			return
		}
		s.status, s.result = "returned", encoded
	})
}

// serverChild keeps the stdio server's process so that the adapter can kill it when it stops
// waiting (watchdog, close wait bound). command is the SDK's default command construction
// (transport/stdio.go spawnCommand), handed in through WithCommandFunc only to keep the *exec.Cmd.
type serverChild struct {
	mu      sync.Mutex
	cmd     *exec.Cmd
	process *os.Process
}

func (sc *serverChild) command(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
	cmd := exec.CommandContext(ctx, command, args...)
	cmd.Env = append(os.Environ(), env...)
	sc.mu.Lock()
	sc.cmd = cmd
	sc.mu.Unlock()
	return cmd, nil
}

// started records the spawned process (called after Start returned, so cmd.Process is set).
func (sc *serverChild) started() {
	sc.mu.Lock()
	if sc.cmd != nil {
		sc.process = sc.cmd.Process
	}
	sc.mu.Unlock()
}

func (sc *serverChild) kill() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.process != nil {
		_ = sc.process.Kill()
	}
}

// packageVersion is the SDK's version compiled into this binary, without the "v".
func packageVersion() *string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	for _, dep := range info.Deps {
		if dep.Path == sdkModule {
			if dep.Replace != nil {
				dep = dep.Replace
			}
			v := strings.TrimPrefix(dep.Version, "v")
			return &v
		}
	}
	return nil
}

// ---- The cell file and its options (observe.mjs readCell / checkOptions / checkCancelAfter) ----

func fail(message string) {
	fmt.Fprintf(os.Stderr, "mcp-go adapter: %s\n", message)
	os.Exit(2)
}

var cellKeys = []string{"cell_id", "options", "server", "calls", "followup", "call_timeout_ms", "budget_ms"}

func readCell(path string) (*cell, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read cell file %s: %v", path, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		var probe any
		if json.Unmarshal(data, &probe) == nil {
			return nil, fmt.Errorf("%s: the cell is not a JSON object", path)
		}
		return nil, fmt.Errorf("cannot read cell file %s: %v", path, err)
	}
	if fields == nil {
		return nil, fmt.Errorf("%s: the cell is not a JSON object", path)
	}
	if got := string(fields["contract"]); got != "1" {
		if got == "" {
			got = "null"
		}
		return nil, fmt.Errorf("%s: contract %s is not supported (expected %d)", path, got, contract)
	}
	var missing []string
	for _, key := range cellKeys {
		if _, ok := fields[key]; !ok {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: missing key(s): %s", path, strings.Join(missing, ", "))
	}
	var c cell
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if c.Followup == nil {
		return nil, fmt.Errorf("%s: followup: expected a call object", path)
	}
	for _, call := range append(c.Calls[:len(c.Calls):len(c.Calls)], c.Followup) {
		if err := call.checkCancelAfter(); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// checkCancelAfter reads cancel_after_ms: absent or null, or a non-negative integer.
func (call *toolCall) checkCancelAfter() error {
	raw := call.CancelAfterMs
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&n) == nil {
		if v, err := n.Int64(); err == nil && v >= 0 {
			after := time.Duration(v) * time.Millisecond
			call.cancelAfter = &after
			return nil
		}
	}
	return fmt.Errorf("cancel_after_ms: expected a non-negative integer, got %s", raw)
}

// checkOptions reports every problem with the cell's options, in their order, joined by "; ".
func checkOptions(raw json.RawMessage) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("options: expected an object, got %s", raw)
	}
	understood := make([]string, 0, len(knownOptions))
	for name := range knownOptions {
		understood = append(understood, name)
	}
	sort.Strings(understood)
	options := map[string]any{}
	var problems []string
	for d.More() {
		tok, _ := d.Token()
		key, _ := tok.(string)
		var value any
		var text json.RawMessage
		if err := d.Decode(&text); err != nil {
			return nil, fmt.Errorf("options: %v", err)
		}
		vd := json.NewDecoder(bytes.NewReader(text))
		vd.UseNumber()
		_ = vd.Decode(&value)
		want, known := knownOptions[key]
		if !known {
			problems = append(problems, fmt.Sprintf("unknown option %q (this adapter understands: %s)", key, strings.Join(understood, ", ")))
			continue
		}
		if !hasType(value, want) {
			problems = append(problems, fmt.Sprintf("option %q: expected %s, got %s", key, want, text))
			continue
		}
		options[key] = value
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return options, nil
}

func hasType(value any, want string) bool {
	switch want {
	case "boolean":
		_, ok := value.(bool)
		return ok
	case "string":
		_, ok := value.(string)
		return ok
	case "integer":
		n, ok := value.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	case "number":
		_, ok := value.(json.Number)
		return ok
	}
	return false
}
