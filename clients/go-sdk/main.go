// go-sdk adapter: the official MCP Go SDK (github.com/modelcontextprotocol/go-sdk,
// package mcp) as an MCP client.
//
//	adapter <cell.json> <observation.json>      (cwd = this directory)
//
// The steps of clients/_support/mcp_driver.mjs, on one session, run by the shared
// contract package (clients/_support/go, observe.Main): mcp.NewClient and
// Client.Connect over the SDK's own transport (initialize step), ListTools when
// option list_tools is true, every call of the cell and the follow-up through
// ClientSession.CallTool, then ClientSession.Close. This file holds only what is
// specific to the SDK; it records facts only (see docs/adapters.md).
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
// caller bounds a request with its context (observe.Run.RequestContext: call_timeout_ms,
// for Connect too); observe.Main cancels a call's cancel_after_ms after it started:
// the SDK then sends notifications/cancelled and returns ctx.Err().
//
// Close: ClientSession.Close, awaited at most observe.CloseWait (6 s; the command
// transport's own close waits 5 s for the server to exit before SIGTERM). A failed
// Connect has closed what it opened: there is no session, and no close step.
//
// Errors: a *jsonrpc.Error anywhere in an error's wrap chain gives its code and data.
// Out-of-band errors: the SDK reports them only through ClientOptions.Logger (the run's
// logger, observe's logHandler); a panic in one of its goroutines would end the
// process (no observation: the harness records a crash, as an application would
// have crashed).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"

	observe "mcp-client-matrix/clients/_support/go"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	observe.Main(observe.Adapter{
		Name:    "go-sdk",
		Module:  "github.com/modelcontextprotocol/go-sdk",
		Options: map[string]string{"list_tools": "boolean"},
		Codes:   codes,
		Connect: connect,
	})
}

// codes reads a *jsonrpc.Error (the SDK's wire error) found in err's wrap chain.
func codes(err error) (int64, json.RawMessage, bool) {
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return wire.Code, wire.Data, true
	}
	return 0, nil, false
}

func connect(r *observe.Run) (observe.Session, error) {
	client := mcp.NewClient(
		&mcp.Implementation{Name: "mcp-client-matrix", Version: "0.1.0"},
		&mcp.ClientOptions{Logger: r.Logger()},
	)
	ctx, cancel := r.RequestContext()
	defer cancel()
	session, err := client.Connect(ctx, makeTransport(r), nil)
	if err != nil {
		return nil, err // Connect closed what it had opened
	}
	return goSession{session}, nil
}

func makeTransport(r *observe.Run) mcp.Transport {
	c := r.Cell
	if c.Transport != "stdio" {
		return &mcp.StreamableClientTransport{Endpoint: *c.Server.URL}
	}
	cmd := exec.Command(c.Server.Command, c.Server.Args...)
	cmd.Env = append(os.Environ(), c.Server.Environ()...)
	cmd.Stderr = os.Stderr
	return trackedCommand{&mcp.CommandTransport{Command: cmd}, &r.Child}
}

// trackedCommand is the SDK's CommandTransport; Connect (inside Client.Connect, which
// starts the server) also hands the started process to the run's Child.
type trackedCommand struct {
	*mcp.CommandTransport
	child *observe.Child
}

func (t trackedCommand) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.CommandTransport.Connect(ctx)
	t.child.Started(t.Command)
	return conn, err
}

// goSession is a connected *mcp.ClientSession.
type goSession struct{ *mcp.ClientSession }

func (s goSession) ProtocolVersion() *string {
	if res := s.InitializeResult(); res != nil {
		return &res.ProtocolVersion
	}
	return nil
}

func (s goSession) ListTools(ctx context.Context) (names []string, err error) {
	listed, err := s.ClientSession.ListTools(ctx, nil)
	if err == nil {
		for _, tool := range listed.Tools {
			names = append(names, tool.Name)
		}
	}
	return names, err
}

// CallTool returns the SDK's *mcp.CallToolResult, recorded in its own JSON form (its MarshalJSON).
func (s goSession) CallTool(ctx context.Context, name string, arguments any) (any, error) {
	return s.ClientSession.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: arguments})
}
