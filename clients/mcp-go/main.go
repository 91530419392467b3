// The mcp-go adapter: github.com/mark3labs/mcp-go (its client package) as an MCP client.
//
//	adapter <cell.json> <observation.json>      (cwd = this directory)
//
// For `stdio` it spawns the reference server through the SDK's own stdio transport
// (transport.NewStdioWithOptions, started by Client.Start: the server is the client's child, with
// server.env added to the environment the SDK's way, appended to os.Environ()); for `http-json` /
// `http-sse` it connects to server.url through client.NewStreamableHttpClient. Then the shared
// contract package (clients/_support/go, observe.Main) runs Client.Initialize, ListTools when the
// variant asks for it, every call of the cell and the follow-up through Client.CallTool, and
// Client.Close, the steps of clients/_support/mcp_driver.mjs, and writes what each step returned
// or raised and what the SDK logged as going wrong out of band. This file holds only what is
// specific to the SDK; facts only (docs/adapters.md).
//
// Protocol: mcp-go v1.2 speaks both revisions by itself. Client.Initialize first probes
// `server/discover` (the 2026-07-28 stateless core) and falls back to the `initialize` handshake
// when the server does not answer it as a modern server (client/protocol.go negotiateModern, probe
// bounded to 5 s). The adapter keeps that default under both `protocol` values of the cell, as an
// application would (no WithProtocolVersion), and records Client.ProtocolVersion(), after a
// failed Initialize too.
//
// Timeouts and cancellation: mcp-go has no request-timeout setting of its own; its requests end
// with their context. Every request gets a context with a deadline of call_timeout_ms
// (observe.Run.RequestContext: the timeout an application sets; Initialize's starts after Start
// spawned the server); a call with cancel_after_ms has that context
// cancelled after so many ms (Go's idiomatic cancellation; the SDK then sends
// notifications/cancelled on stdio, and nothing on HTTP, client.go cancelRequest).
//
// Close: Client.Close, whenever a client was made (after a failed Start or Initialize too),
// awaited at most observe.CloseWait (6 s); the stdio transport waits up to 2 s after closing
// stdin, then SIGTERM and 3 s, then SIGKILL and 3 s (transport/stdio.go Close).
//
// Out-of-band errors: mcp-go reports what goes wrong off a request's path only by logging (stdio:
// "Error reading from stdout"; Streamable HTTP: "SSE stream error", "failed to unmarshal message
// (non-fatal)", ...): the run's logger is given to its transports and made the default logger,
// which the client package logs to.
//
// Options:
//
//	list_tools  (bool) call ListTools after Initialize
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"sync"

	observe "mcp-client-matrix/clients/_support/go"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

var clientInfo = mcp.Implementation{Name: "mcp-client-matrix", Version: "0.1.0"}

func main() {
	observe.Main(observe.Adapter{
		Name:    "mcp-go",
		Module:  "github.com/mark3labs/mcp-go",
		Options: map[string]string{"list_tools": "boolean"},
		Codes:   codes,
		Connect: connect,
	})
}

// errorCodes are the JSON-RPC codes behind the errors mcp-go's JSONRPCErrorDetails.AsError
// returns: it turns a JSON-RPC error into a sentinel (wrapped with the server's message) or a
// typed error and keeps no code; the code is read back the way a Go caller reads it, errors.Is /
// errors.As. A code AsError does not map comes back as errors.New(message): code null, the
// SDK dropped it. JSON-RPC `data` is dropped by AsError as well, so records carry none.
// mcp.UnsupportedProtocolVersionError is also what Initialize itself returns for an initialize
// result naming a version it does not know; -32022 is then the SDK's own code for that error
// type (its JSONRPCError method), not one the server sent.
var errorCodes = []struct {
	code  int64
	match func(error) bool
}{
	{mcp.PARSE_ERROR, is(mcp.ErrParseError)},
	{mcp.INVALID_REQUEST, is(mcp.ErrInvalidRequest)},
	{mcp.METHOD_NOT_FOUND, is(mcp.ErrMethodNotFound)},
	{mcp.INVALID_PARAMS, is(mcp.ErrInvalidParams)},
	{mcp.INTERNAL_ERROR, is(mcp.ErrInternalError)},
	{mcp.REQUEST_INTERRUPTED, is(mcp.ErrRequestInterrupted)},
	{mcp.RESOURCE_NOT_FOUND, is(mcp.ErrResourceNotFound)},
	{mcp.HEADER_MISMATCH, as[mcp.HeaderMismatchError]},
	{mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, as[mcp.MissingRequiredClientCapabilityError]},
	{mcp.UNSUPPORTED_PROTOCOL_VERSION, as[mcp.UnsupportedProtocolVersionError]},
	{mcp.URL_ELICITATION_REQUIRED, as[mcp.URLElicitationRequiredError]},
}

func is(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }
func as[T error](err error) bool       { var target T; return errors.As(err, &target) }

func codes(err error) (int64, json.RawMessage, bool) {
	for _, c := range errorCodes {
		if c.match(err) {
			return c.code, nil, true
		}
	}
	return 0, nil, false
}

// connect makes the SDK's client for the cell's transport, starts it (stdio: spawns the server)
// and initializes it. The client is returned even when starting or initializing failed, so that
// it can be closed.
func connect(r *observe.Run) (observe.Session, error) {
	logger := r.Logger()
	slog.SetDefault(logger) // the client package logs to the default logger
	c := r.Cell
	var mc *client.Client
	var spawned command
	if c.Transport == "stdio" {
		stdio := transport.NewStdioWithOptions(c.Server.Command, c.Server.Environ(), c.Server.Args,
			transport.WithCommandLogger(logger), transport.WithCommandFunc(spawned.make))
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
		return session{mc}, err
	}
	r.Child.Started(spawned.get())
	ctx, cancel := r.RequestContext()
	defer cancel()
	_, err := mc.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: clientInfo}})
	return session{mc}, err
}

// command is the SDK's default command construction (transport/stdio.go spawnCommand), handed in
// through WithCommandFunc only to keep the *exec.Cmd, whose process goes to the run's Child.
type command struct {
	mu  sync.Mutex
	cmd *exec.Cmd
}

func (c *command) make(ctx context.Context, name string, env, args []string) (*exec.Cmd, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	c.mu.Lock()
	c.cmd = cmd
	c.mu.Unlock()
	return cmd, nil
}

func (c *command) get() *exec.Cmd {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cmd
}

// session is a started *client.Client.
type session struct{ *client.Client }

func (s session) ProtocolVersion() *string {
	if v := s.Client.ProtocolVersion(); v != "" {
		return &v
	}
	return nil
}

func (s session) ListTools(ctx context.Context) ([]string, error) {
	listed, err := s.Client.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	names := make([]string, len(listed.Tools))
	for i, tool := range listed.Tools {
		names[i] = tool.Name
	}
	return names, nil
}

// CallTool returns the SDK's *mcp.CallToolResult, recorded in its own JSON mapping
// (CallToolResult.MarshalJSON).
func (s session) CallTool(ctx context.Context, name string, arguments any) (any, error) {
	request := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: arguments}}
	return s.Client.CallTool(ctx, request)
}
