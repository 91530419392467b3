// go-sdk adapter: the official MCP Go SDK (github.com/modelcontextprotocol/go-sdk,
// package mcp) as an MCP client.
//
//	adapter <cell.json> <observation.json>      (cwd = this directory)
//
// The steps of clients/_support/mcp_driver.mjs, on one session: mcp.NewClient,
// Client.Connect over the SDK's own transport (initialize step), ListTools when
// option list_tools is true, every call of the cell and the follow-up through
// ClientSession.CallTool, then ClientSession.Close. It records facts only (see
// docs/adapters.md); the contract's plumbing is observe.go.
//
// Transports:
//   - stdio: mcp.CommandTransport around exec.Command(server.command, server.args...)
//     with server.env added to the environment (the server is our child). Its
//     stderr is ours, so that it lands in the cell's evidence. The SDK reads
//     newline-delimited frames of at most mcp.DefaultMaxLineLength (16 MiB);
//     CommandTransport has no setting for it.
//   - http-json, http-sse: mcp.StreamableClientTransport{Endpoint: server.url}, its
//     defaults otherwise (http.DefaultClient, 5 retries, the standalone SSE stream,
//     MaxEventSize 16 MiB).
//
// Protocol: nothing is configured. The SDK's default (ClientSessionOptions.ProtocolVersion
// empty = its latest, 2026-07-28) probes server/discover and falls back to the
// initialize handshake (2025-11-25) when the server refuses it; so a cell's
// protocol field needs no setting of its own.
//
// Timeouts and cancellation: the SDK has no per-request timeout of its own; a Go
// caller bounds a request with its context. Every request (connect, list, each
// call) gets context.WithTimeout(call_timeout_ms). A call with cancel_after_ms
// also has its context cancelled that many ms after it started, the SDK's
// cancellation: it then sends notifications/cancelled and returns ctx.Err().
//
// Out-of-band errors: the SDK reports them only through ClientOptions.Logger
// (observe.go logRecorder); a panic in one of its goroutines would end the
// process (no observation: the harness records a crash, as an application
// would have crashed).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	sdkModule = "github.com/modelcontextprotocol/go-sdk"
	// closeWait bounds ClientSession.Close, as mcp_driver.mjs CLOSE_WAIT_MS: the
	// command transport's own close waits 5 s for the server to exit before SIGTERM.
	closeWait = 6 * time.Second
)

// The options this adapter understands, and their JSON types.
var knownOptions = map[string]string{"list_tools": "boolean"}

func main() {
	start := time.Now()
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "go-sdk adapter: "+format+"\n", args...)
		os.Exit(2)
	}
	if len(os.Args) != 3 {
		fail("usage: adapter <cell.json> <observation.json>")
	}
	c, err := readCell(os.Args[1])
	if err != nil {
		fail("%v", err)
	}
	options, err := checkOptions(c.Options, knownOptions)
	if err != nil {
		fail("%v", err)
	}
	switch c.Transport {
	case "stdio":
	case "http-json", "http-sse":
		if c.Server.URL == nil {
			fail("transport %s needs server.url", c.Transport)
		}
	default:
		fail("transport %s is not supported (stdio, http-json, http-sse)", jsonText(c.Transport))
	}
	for _, call := range append(append([]toolCall{}, c.Calls...), derefCall(c.Followup)...) {
		if _, err := call.cancelAfter(); err != nil {
			fail("%v", err)
		}
	}

	r := newRun(c, os.Args[2], sdkModule, start)
	child := &serverChild{}
	r.onAbort = child.kill

	// The watchdog and the signals write what was gathered and exit 0.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig := <-signals
		r.abort(fmt.Sprintf("received %s", signalName(sig)))
	}()
	time.AfterFunc(r.deadline-time.Since(start), func() {
		r.abort(fmt.Sprintf("budget watchdog at %d ms of %s ms", r.deadline.Milliseconds(), jsNumber(c.BudgetMs)))
	})

	defer func() { // a bug of this adapter: write what was gathered, exit 1
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "go-sdk adapter: internal error: %v\n", p)
			child.kill()
			r.finish(fmt.Sprintf("adapter internal error: %v", p), 1)
		}
	}()
	reason := drive(r, c, options, child)
	r.finish(reason, 0)
}

func derefCall(c *toolCall) []toolCall {
	if c == nil {
		return nil
	}
	return []toolCall{*c}
}

func signalName(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// serverChild is the stdio server process, known once CommandTransport started it.
type serverChild struct {
	mu  sync.Mutex
	cmd *exec.Cmd
}

// kill SIGKILLs the server child, if one was started.
func (s *serverChild) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
	}
}

// trackedCommand is the SDK's CommandTransport; Connect also notes the started
// process for serverChild (the SDK starts it inside Client.Connect).
type trackedCommand struct {
	*mcp.CommandTransport
	child *serverChild
}

func (t trackedCommand) Connect(ctx context.Context) (mcp.Connection, error) {
	t.child.mu.Lock()
	defer t.child.mu.Unlock()
	conn, err := t.CommandTransport.Connect(ctx)
	t.child.cmd = t.Command
	return conn, err
}

func makeTransport(c *cell, child *serverChild) mcp.Transport {
	if c.Transport != "stdio" {
		return &mcp.StreamableClientTransport{Endpoint: *c.Server.URL}
	}
	cmd := exec.Command(c.Server.Command, c.Server.Args...)
	cmd.Env = os.Environ()
	keys := make([]string, 0, len(c.Server.Env))
	for k := range c.Server.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+c.Server.Env[k])
	}
	cmd.Stderr = os.Stderr
	return trackedCommand{&mcp.CommandTransport{Command: cmd}, child}
}

// drive runs the steps of one session and returns the reason to finish with.
func drive(r *run, c *cell, options map[string]any, child *serverChild) string {
	timeout := time.Duration(c.CallTimeoutMs * float64(time.Millisecond))
	client := mcp.NewClient(
		&mcp.Implementation{Name: "mcp-client-matrix", Version: "0.1.0"},
		&mcp.ClientOptions{Logger: slog.New(newLogRecorder(r, os.Stderr))},
	)

	initStep := r.begin("initialize", "", func(rec *record) { r.obs.Initialize = rec })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	session, err := client.Connect(ctx, makeTransport(c, child), nil)
	cancel()
	r.settle(initStep, func(rec *record) {
		if err != nil {
			rec.Error = ptr(errorRecord(err))
			return
		}
		rec.Status = "ok"
		if res := session.InitializeResult(); res != nil {
			rec.ProtocolVer = &res.ProtocolVersion
		}
	})
	if err != nil {
		// Connect closed what it had opened; nothing is left to close.
		return "finished"
	}

	if options["list_tools"] == true {
		step := r.begin("list_tools", "", func(rec *record) { r.obs.ListTools = rec })
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		listed, err := session.ListTools(ctx, nil)
		cancel()
		r.settle(step, func(rec *record) {
			if err != nil {
				rec.Error = ptr(errorRecord(err))
				return
			}
			rec.Status, rec.Tools = "ok", []string{}
			for _, tool := range listed.Tools {
				rec.Tools = append(rec.Tools, tool.Name)
			}
		})
	}

	for _, call := range c.Calls {
		callStep(r, session, "call", call, timeout, func(rec *record) { r.obs.Calls = append(r.obs.Calls, rec) })
	}
	if c.Followup != nil {
		callStep(r, session, "followup", *c.Followup, timeout, func(rec *record) { r.obs.Followup = rec })
	}

	// Close, awaited at most closeWait and no later than 200 ms before the watchdog.
	step := r.begin("close", "", func(rec *record) { r.obs.Close = rec })
	wait := max(0, min(closeWait, r.deadline-time.Since(r.start)-200*time.Millisecond))
	closed := make(chan struct{})
	go func() {
		err := session.Close()
		r.settle(step, func(rec *record) {
			if err != nil {
				rec.Error = ptr(errorRecord(err))
			} else {
				rec.Status = "ok"
			}
		})
		close(closed)
	}()
	select {
	case <-closed:
		return "finished"
	case <-time.After(wait):
		child.kill()
		return fmt.Sprintf("close wait bound of %d ms", wait.Milliseconds())
	}
}

// callStep makes one CallTool with its own context: call_timeout_ms, and, with
// cancel_after_ms, cancelled that many ms after the call started (what an
// application's cancel does in Go). cancelled_after_ms is when the cancel was
// issued, null when the call settled first.
func callStep(r *run, session *mcp.ClientSession, kind string, call toolCall, timeout time.Duration, place func(*record)) {
	rec := r.begin(kind, call.Name, place)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	after, _ := call.cancelAfter() // checked in main
	var (
		mu       sync.Mutex
		issuedAt *float64
	)
	if after != nil {
		timer := time.AfterFunc(time.Duration(*after)*time.Millisecond, func() {
			mu.Lock()
			issuedAt = ptr(since(rec.started))
			mu.Unlock()
			cancel()
		})
		defer timer.Stop()
	}

	params := &mcp.CallToolParams{Name: call.Name}
	if s := string(call.Arguments); s != "" && s != "null" {
		params.Arguments = call.Arguments // marshalled as the cell has it
	}
	result, err := session.CallTool(ctx, params)
	var raw json.RawMessage
	if err == nil {
		// The SDK's own JSON form of its *mcp.CallToolResult (its MarshalJSON).
		raw, err = json.Marshal(result)
		if err != nil { // not expected: keep the value, in Go syntax
			raw, err = json.Marshal(fmt.Sprintf("%+v", result))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	r.settle(rec, func(rec *record) {
		if err != nil {
			rec.Error = ptr(errorRecord(err))
		} else {
			rec.Status, rec.Result = "returned", raw
		}
		if after != nil {
			rec.CancelledAfter = json.RawMessage("null")
			if issuedAt != nil {
				rec.CancelledAfter = json.RawMessage(jsNumber(*issuedAt))
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }
