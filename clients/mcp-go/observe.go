// The observation of one cell (docs/adapters.md, "The observation"): the Go counterpart of
// clients/_support/observe.mjs createRun / errorRecord / writeObservation, to which it holds step
// by step. The observation is complete at every moment: a step is entered as pending before it is
// awaited, so the budget watchdog (or a signal) can write it, naming the step that had not
// settled, and exit 0.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

const (
	contract           = 1
	maxChain           = 10   // causes kept in an Error's chain
	maxTransportErrors = 1000 // out-of-band errors kept; further ones are only counted
)

// started is when the process started: the budget counts from here, as Node's performance.now().
var started = time.Now()

// errRecord is the contract's Error object.
type errRecord struct {
	Type    string      `json:"type"`
	Code    *int        `json:"code"`
	Message string      `json:"message"`
	Chain   []errRecord `json:"chain,omitempty"`
}

// step is one step of the observation: initialize, list_tools, a call (the follow-up too) or close.
type step struct {
	kind            string // "initialize" | "list_tools" | "call" | "close"
	tool            string
	status          string
	result          json.RawMessage // a returned call's result, as the SDK serializes it
	err             *errRecord
	protocolVersion *string
	tools           []string
	durationMs      float64
	cancellable     bool     // the call had cancel_after_ms: the record gets cancelled_after_ms
	cancelledAfter  *float64 // when the cancellation was issued (nil: the call settled first)
	begun, ended    time.Time
}

func (s *step) elapsed() float64 { return ms(time.Since(s.begun)) }

// settled marks when the step's SDK call returned (before the adapter serializes its result).
func (s *step) settled() { s.ended = time.Now() }

// MarshalJSON writes the keys of the step's kind, in the order the Node driver writes them.
func (s *step) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	field := func(key string, value any) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(marshal(value))
	}
	if s.kind == "call" {
		field("tool", s.tool)
	}
	field("status", s.status)
	if s.kind == "call" {
		if s.result != nil {
			field("result", s.result)
		} else {
			field("result", nil)
		}
	}
	field("error", s.err)
	switch s.kind {
	case "initialize":
		field("protocol_version", s.protocolVersion)
	case "list_tools":
		field("tools", s.tools)
	}
	field("duration_ms", s.durationMs)
	if s.cancellable {
		field("cancelled_after_ms", s.cancelledAfter)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// observation is what the adapter writes.
type observation struct {
	Contract        int         `json:"contract"`
	PackageVersion  *string     `json:"package_version"`
	RuntimeVersion  string      `json:"runtime_version"`
	Initialize      *step       `json:"initialize"`
	ListTools       *step       `json:"list_tools"`
	Calls           []*step     `json:"calls"`
	Followup        *step       `json:"followup"`
	TransportErrors []errRecord `json:"transport_errors"`
	Close           *step       `json:"close"`
}

// run holds the observation of one cell, its watchdog and what to do before an early write.
type run struct {
	mu       sync.Mutex
	obs      observation
	cell     *cell
	path     string
	pending  map[*step]bool
	written  bool
	dropped  int
	deadline time.Duration // since process start
	onAbort  func()
}

// newRun starts the watchdog at the budget minus 5 % (0.5..2 s), measured from process start, and
// the SIGTERM/SIGINT handlers; each writes the observation gathered so far and exits 0.
func newRun(c *cell, path string, packageVersion *string, runtimeVersion string, onAbort func()) *run {
	budget := time.Duration(c.BudgetMs) * time.Millisecond
	margin := min(2*time.Second, max(500*time.Millisecond, budget/20))
	r := &run{
		obs: observation{
			Contract: contract, PackageVersion: packageVersion, RuntimeVersion: runtimeVersion,
			Calls: []*step{}, TransportErrors: []errRecord{},
		},
		cell: c, path: path, pending: map[*step]bool{}, deadline: budget - margin, onAbort: onAbort,
	}
	time.AfterFunc(time.Until(started.Add(r.deadline)), func() {
		r.abort(fmt.Sprintf("budget watchdog at %d ms of %d ms", r.deadline.Milliseconds(), c.BudgetMs))
	})
	return r
}

// begin enters a pending step (recorded as raised until it settles).
func (r *run) begin(kind, tool string) *step {
	s := &step{kind: kind, tool: tool, status: "raised", begun: time.Now()}
	r.mu.Lock()
	r.pending[s] = true
	r.mu.Unlock()
	return s
}

// settle records how a step ended; fill sets its fields under the lock. The duration ends when
// the step's SDK call returned (step.settled), else now.
func (r *run) settle(s *step, fill func(*step)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written {
		return
	}
	delete(r.pending, s)
	fill(s)
	if s.ended.IsZero() {
		s.settled()
	}
	s.durationMs = ms(s.ended.Sub(s.begun))
}

// place puts a step into the observation (under the lock; set runs with the observation).
func (r *run) place(set func(*observation)) {
	r.mu.Lock()
	set(&r.obs)
	r.mu.Unlock()
}

// reportError records an out-of-band error; beyond maxTransportErrors they are only counted.
func (r *run) reportError(e errRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.obs.TransportErrors) >= maxTransportErrors {
		r.dropped++
		return
	}
	r.obs.TransportErrors = append(r.obs.TransportErrors, e)
}

// untilDeadline is how long is left before the watchdog fires.
func (r *run) untilDeadline() time.Duration { return r.deadline - time.Since(started) }

// finish writes the observation and exits 0 (the normal end, or the watchdog's).
func (r *run) finish(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.written {
		r.write(reason)
	}
	os.Exit(0)
}

// abort kills the server child (best effort), then writes and exits 0.
func (r *run) abort(reason string) {
	if r.onAbort != nil {
		r.onAbort()
	}
	r.finish(reason)
}

// write completes the observation as observe.mjs does and writes it atomically (lock held).
func (r *run) write(reason string) {
	r.written = true
	for s := range r.pending { // a step that had not settled: the adapter's deadline ended it
		s.status = "raised"
		s.durationMs = s.elapsed()
		what := s.kind
		if s.tool != "" {
			what += " " + s.tool
		}
		s.err = deadlineError(what, &s.durationMs, reason)
	}
	clear(r.pending)
	o := &r.obs
	if o.Initialize == nil {
		o.Initialize = &step{kind: "initialize", status: "raised", err: deadlineError("initialize", nil, "")}
	}
	if o.Initialize.status != "ok" {
		o.Calls, o.Followup = []*step{}, nil
	} else {
		for _, call := range r.cell.Calls[len(o.Calls):] {
			o.Calls = append(o.Calls, notStarted("call", call.Name))
		}
		if o.Followup == nil {
			o.Followup = notStarted("followup", r.cell.Followup.Name)
		}
	}
	if r.dropped > 0 {
		o.TransportErrors = append(o.TransportErrors, errRecord{Type: "AdapterTruncated",
			Message: fmt.Sprintf("%d further out-of-band error reports were not recorded", r.dropped)})
	}
	if err := writeAtomically(r.path, marshal(o)); err != nil {
		fmt.Fprintf(os.Stderr, "mcp-go adapter: cannot write the observation: %v\n", err)
		os.Exit(1)
	}
}

func notStarted(kind, tool string) *step {
	return &step{kind: "call", tool: tool, status: "raised", err: deadlineError(kind+" "+tool, nil, "")}
}

// deadlineError is the reserved AdapterTimeout error (observe.mjs deadlineError).
func deadlineError(what string, elapsedMs *float64, reason string) *errRecord {
	message := "adapter deadline: " + what + " not started, the adapter's deadline had passed"
	if elapsedMs != nil {
		message = fmt.Sprintf("adapter deadline: %s ended by the adapter after %s ms", what, number(*elapsedMs))
	}
	if reason != "" {
		message += " (" + reason + ")"
	}
	return &errRecord{Type: "AdapterTimeout", Message: message}
}

// writeAtomically writes data to a temporary file beside path, fsyncs it and renames it into place.
func writeAtomically(path string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf(".observation-%d.tmp", os.Getpid()))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// marshal is json.Marshal without HTML escaping (text stays as the server sent it).
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Never happens for the adapter's own records; a result that cannot be serialized
		// (the SDK's MarshalJSON failing) is recorded as that failure's text.
		return marshal(fmt.Sprintf("<not serializable: %v>", err))
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// ms is a duration in milliseconds, rounded to 0.1 ms.
func ms(d time.Duration) float64 { return math.Round(float64(d)/1e5) / 10 }

// number formats a float as JavaScript does (no trailing ".0").
func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// ---- Error records ----

// errorCodes are the JSON-RPC codes behind the errors mcp-go's JSONRPCErrorDetails.AsError
// returns: it turns a JSON-RPC error into a sentinel (wrapped with the server's message) or a
// typed error and keeps no code; the code is read back the way a Go caller reads it, errors.Is /
// errors.As. A code AsError does not map comes back as errors.New(message): code null, the
// SDK dropped it. JSON-RPC `data` is dropped by AsError as well, so records carry none.
// mcp.UnsupportedProtocolVersionError is also what Initialize itself returns for an initialize
// result naming a version it does not know; -32022 is then the SDK's own code for that error
// type (its JSONRPCError method), not one the server sent.
var errorCodes = []struct {
	code  int
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

func flatRecord(err error) errRecord {
	rec := errRecord{Type: fmt.Sprintf("%T", err), Message: err.Error()}
	for _, c := range errorCodes {
		if c.match(err) {
			code := c.code
			rec.Code = &code
			break
		}
	}
	return rec
}

// errorRecord turns an error into the contract's Error: `type` is its Go type (`*transport.Error`,
// `*fmt.wrapError`, `context.deadlineExceededError`), `chain` the wrapped errors (Unwrap, and the
// members of a join), depth first, innermost last, at most maxChain, each error once.
func errorRecord(err error) *errRecord {
	rec := flatRecord(err)
	seen := map[uintptr]bool{}
	var visit func(error)
	visit = func(e error) {
		var next []error
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			next = u.Unwrap()
		case interface{ Unwrap() error }:
			next = []error{u.Unwrap()}
		}
		for _, member := range next {
			if member == nil || len(rec.Chain) >= maxChain {
				continue
			}
			if v := reflect.ValueOf(member); v.Kind() == reflect.Pointer {
				if seen[v.Pointer()] {
					continue
				}
				seen[v.Pointer()] = true
			}
			rec.Chain = append(rec.Chain, flatRecord(member))
			visit(member)
		}
	}
	visit(err)
	return &rec
}

// ---- Out-of-band errors: the SDK's slog records ----

// logHandler is the slog handler the adapter gives the SDK's transports (and makes the default,
// which the client package logs to). mcp-go reports what goes wrong off a request's path only by
// logging (stdio: "Error reading from stdout"; Streamable HTTP: "SSE stream error", "failed to
// unmarshal message (non-fatal)", ...); every record at Warn or above, and every record that
// carries an error value, goes to transport_errors. All records are also echoed on stderr.
type logHandler struct {
	run   *run
	echo  slog.Handler
	attrs []slog.Attr
}

func (h *logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *logHandler) Handle(ctx context.Context, rec slog.Record) error {
	_ = h.echo.Handle(ctx, rec)
	var cause error
	var text strings.Builder
	text.WriteString(rec.Level.String() + " " + rec.Message)
	collect := func(a slog.Attr) bool {
		if e, ok := a.Value.Any().(error); ok && cause == nil {
			cause = e
		}
		fmt.Fprintf(&text, " %s=%q", a.Key, a.Value.String())
		return true
	}
	for _, a := range h.attrs {
		collect(a)
	}
	rec.Attrs(collect)
	if rec.Level < slog.LevelWarn && cause == nil {
		return nil
	}
	e := errRecord{Type: "slog.Record", Message: text.String()}
	if cause != nil { // the logged error's own type and chain
		inner := errorRecord(cause)
		e.Type, e.Code, e.Chain = inner.Type, inner.Code, inner.Chain
	}
	h.run.reportError(e)
	return nil
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logHandler{run: h.run, echo: h.echo.WithAttrs(attrs), attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{run: h.run, echo: h.echo.WithGroup(name), attrs: h.attrs}
}
