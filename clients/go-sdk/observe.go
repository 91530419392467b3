// The adapter contract's plumbing (docs/adapters.md), the Go counterpart of
// clients/_support/observe.mjs: the cell file and its options, the observation
// with its "pending" steps, the budget watchdog, Error records and the atomic
// write. Nothing here knows about the SDK.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

const (
	contract           = 1
	maxChain           = 10   // causes an Error's chain holds at most
	maxTransportErrors = 1000 // out-of-band errors an observation keeps
)

// cellKeys are the keys every contract-1 cell file must have.
var cellKeys = []string{"cell_id", "options", "server", "calls", "followup", "call_timeout_ms", "budget_ms"}

type toolCall struct {
	Name          string          `json:"name"`
	Arguments     json.RawMessage `json:"arguments"` // passed on as the cell has it
	CancelAfterMs json.RawMessage `json:"cancel_after_ms"`
}

type cell struct {
	CellID    string `json:"cell_id"`
	Transport string `json:"transport"`
	Protocol  string `json:"protocol"`
	Server    struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
		URL     *string           `json:"url"`
	} `json:"server"`
	Calls         []toolCall      `json:"calls"`
	Followup      *toolCall       `json:"followup"`
	CallTimeoutMs float64         `json:"call_timeout_ms"`
	BudgetMs      float64         `json:"budget_ms"`
	Options       json.RawMessage `json:"options"`
}

// readCell reads and checks a cell file with observe.mjs readCell's messages.
func readCell(file string) (*cell, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("cannot read cell file %s: %v", file, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return nil, fmt.Errorf("cannot read cell file %s: %v", file, err)
		}
		return nil, fmt.Errorf("%s: the cell is not a JSON object", file)
	}
	if top == nil {
		return nil, fmt.Errorf("%s: the cell is not a JSON object", file)
	}
	var version float64
	if json.Unmarshal(top["contract"], &version) != nil || version != contract {
		v := string(top["contract"])
		if v == "" {
			v = "null"
		}
		return nil, fmt.Errorf("%s: contract %s is not supported (expected %d)", file, v, contract)
	}
	var missing []string
	for _, key := range cellKeys {
		if _, ok := top[key]; !ok {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: missing key(s): %s", file, strings.Join(missing, ", "))
	}
	var c cell
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("cannot read cell file %s: %v", file, err)
	}
	return &c, nil
}

// checkOptions mirrors observe.mjs checkOptions: every problem, in the options'
// order, joined by "; "; known maps an option to its JSON type ("boolean", ...).
func checkOptions(raw json.RawMessage, known map[string]string) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("options: expected an object, got %s", strings.TrimSpace(string(raw)))
	}
	names := make([]string, 0, len(known))
	for name := range known {
		names = append(names, name)
	}
	sort.Strings(names)
	options := map[string]any{}
	var problems []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("options: %v", err)
		}
		key := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, fmt.Errorf("options: %v", err)
		}
		want, ok := known[key]
		if !ok {
			problems = append(problems, fmt.Sprintf("unknown option %s (this adapter understands: %s)", jsonText(key), strings.Join(names, ", ")))
			continue
		}
		var v any
		_ = json.Unmarshal(value, &v)
		if (want == "boolean" && reflect.TypeOf(v) != reflect.TypeOf(true)) ||
			(want == "integer" && !isInteger(v)) {
			problems = append(problems, fmt.Sprintf("option %s: expected %s, got %s", jsonText(key), want, value))
			continue
		}
		options[key] = v
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return options, nil
}

func isInteger(v any) bool {
	f, ok := v.(float64)
	return ok && f == math.Trunc(f)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// cancelAfter is a call's cancel_after_ms (nil when absent or null), or an error
// with observe.mjs checkCancelAfter's message.
func (c toolCall) cancelAfter() (*int64, error) {
	raw := strings.TrimSpace(string(c.CancelAfterMs))
	if raw == "" || raw == "null" {
		return nil, nil
	}
	var f float64
	if err := json.Unmarshal(c.CancelAfterMs, &f); err != nil || f < 0 || f != math.Trunc(f) {
		return nil, fmt.Errorf("cancel_after_ms: expected a non-negative integer, got %s", raw)
	}
	n := int64(f)
	return &n, nil
}

// ---- Error records ----------------------------------------------------------

// errorInfo is the contract's Error object.
type errorInfo struct {
	Type    string          `json:"type"`
	Code    *int64          `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
	Chain   []errorInfo     `json:"chain,omitempty"`
}

// flatRecord is one error without its causes: type is the Go type name (%T),
// code and data those of a JSON-RPC error (*jsonrpc.Error) when err is one.
func flatRecord(err error) errorInfo {
	rec := errorInfo{Type: fmt.Sprintf("%T", err), Message: err.Error()}
	if wire, ok := err.(*jsonrpc.Error); ok {
		rec.Code, rec.Data = &wire.Code, nonNullJSON(wire.Data)
	}
	return rec
}

// errorRecord turns an error into the contract's Error: the top error's type
// and message, the JSON-RPC code and data found anywhere in its wrap chain
// (errors.As, how a Go caller reads them), and the chain of wrapped causes
// (errors.Unwrap, and every member of an errors.Join / multi-%w, depth first),
// innermost last, each error once, at most maxChain.
func errorRecord(err error) errorInfo {
	rec := flatRecord(err)
	var wire *jsonrpc.Error
	if rec.Code == nil && errors.As(err, &wire) {
		rec.Code, rec.Data = &wire.Code, nonNullJSON(wire.Data)
	}
	seen := map[any]bool{}
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
			if reflect.TypeOf(member).Comparable() {
				if seen[member] {
					continue
				}
				seen[member] = true
			}
			rec.Chain = append(rec.Chain, flatRecord(member))
			visit(member)
		}
	}
	visit(err)
	return rec
}

func nonNullJSON(raw json.RawMessage) json.RawMessage {
	if s := strings.TrimSpace(string(raw)); s == "" || s == "null" || !json.Valid(raw) {
		return nil
	}
	return raw
}

// deadlineError is the reserved AdapterTimeout Error (observe.mjs deadlineError):
// elapsed nil means the step never started.
func deadlineError(what string, elapsed *float64, reason string) *errorInfo {
	msg := fmt.Sprintf("adapter deadline: %s not started, the adapter's deadline had passed", what)
	if elapsed != nil {
		msg = fmt.Sprintf("adapter deadline: %s ended by the adapter after %s ms", what, jsNumber(*elapsed))
	}
	if reason != "" {
		msg += " (" + reason + ")"
	}
	return &errorInfo{Type: "AdapterTimeout", Message: msg}
}

// jsNumber prints a number as JavaScript does (1500, 12.5).
func jsNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// ---- The observation --------------------------------------------------------

// record is one step of the observation: initialize, list_tools, a call, the
// follow-up or close. Its JSON form has the fields of its kind only.
type record struct {
	kind           string // "initialize", "list_tools", "call", "followup", "close"
	Tool           string
	Status         string
	Result         json.RawMessage // a returned call: the SDK's own JSON of its result
	Error          *errorInfo
	ProtocolVer    *string
	Tools          []string
	CancelledAfter json.RawMessage // nil: the call had no cancel_after_ms
	DurationMs     float64
	started        time.Time
}

func (r *record) MarshalJSON() ([]byte, error) {
	m := map[string]any{"status": r.Status, "error": r.Error, "duration_ms": r.DurationMs}
	switch r.kind {
	case "initialize":
		m["protocol_version"] = r.ProtocolVer
	case "list_tools":
		m["tools"] = r.Tools
	case "call", "followup":
		m["tool"] = r.Tool
		m["result"] = r.Result
		if r.Result == nil {
			m["result"] = nil
		}
		if r.CancelledAfter != nil {
			m["cancelled_after_ms"] = r.CancelledAfter
		}
	}
	return json.Marshal(m)
}

type observation struct {
	Contract        int         `json:"contract"`
	PackageVersion  *string     `json:"package_version"`
	RuntimeVersion  string      `json:"runtime_version"`
	Initialize      *record     `json:"initialize"`
	ListTools       *record     `json:"list_tools"`
	Calls           []*record   `json:"calls"`
	Followup        *record     `json:"followup"`
	TransportErrors []errorInfo `json:"transport_errors"`
	Close           *record     `json:"close"`
}

// run is the observation of one cell with the pending steps, guarded by mu
// (the SDK's goroutines, the watchdog and the driver all touch it). Whatever
// stops the run writes what was gathered: a pending step as an AdapterTimeout,
// the calls never started as AdapterTimeout "not started".
type run struct {
	mu       sync.Mutex
	obs      observation
	cell     *cell
	obsPath  string
	pending  map[*record]bool
	seen     map[any]bool // out-of-band errors already recorded
	dropped  int
	written  bool
	start    time.Time
	deadline time.Duration // watchdog, from start
	onAbort  func()        // kills the server child when the adapter stops waiting
}

func newRun(c *cell, obsPath, module string, start time.Time) *run {
	// Node's watchdog: the budget minus 5 %, clamped to 0.5..2 s.
	margin := math.Min(2000, math.Max(500, c.BudgetMs*0.05))
	return &run{
		obs: observation{
			Contract:        contract,
			PackageVersion:  moduleVersion(module),
			RuntimeVersion:  runtime.Version(),
			Calls:           []*record{},
			TransportErrors: []errorInfo{},
		},
		cell:     c,
		obsPath:  obsPath,
		pending:  map[*record]bool{},
		seen:     map[any]bool{},
		start:    start,
		deadline: time.Duration((c.BudgetMs - margin) * float64(time.Millisecond)),
	}
}

// moduleVersion is the version of module compiled into this binary ("1.8.0").
func moduleVersion(module string) *string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	for _, dep := range info.Deps {
		if dep.Path == module {
			v := strings.TrimPrefix(dep.Version, "v")
			return &v
		}
	}
	return nil
}

func since(t time.Time) float64 {
	return math.Round(float64(time.Since(t))/float64(time.Millisecond)*10) / 10
}

// begin enters a pending step; place puts it into the observation.
func (r *run) begin(kind, tool string, place func(*record)) *record {
	rec := &record{kind: kind, Tool: tool, Status: "raised", started: time.Now()}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending[rec] = true
	place(rec)
	return rec
}

// settle fills a step that ended; fill runs under the lock.
func (r *run) settle(rec *record, fill func(*record)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, rec)
	fill(rec)
	rec.DurationMs = since(rec.started)
}

// reportError records an out-of-band error once, at most maxTransportErrors.
func (r *run) reportError(err errorInfo, identity any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if identity != nil && reflect.TypeOf(identity).Comparable() {
		if r.seen[identity] {
			return
		}
		r.seen[identity] = true
	}
	if len(r.obs.TransportErrors) >= maxTransportErrors {
		r.dropped++
		return
	}
	r.obs.TransportErrors = append(r.obs.TransportErrors, err)
}

// finish writes the observation (once) and exits with code.
func (r *run) finish(reason string, code int) {
	r.mu.Lock() // held until exit: nothing changes the observation after this
	if !r.written {
		r.written = true
		r.complete(reason)
		if err := writeObservation(r.obsPath, &r.obs); err != nil {
			fmt.Fprintf(os.Stderr, "go-sdk adapter: cannot write the observation: %v\n", err)
			os.Exit(1)
		}
	}
	os.Exit(code)
}

// abort is an early end (watchdog, signal): the server child is killed first.
func (r *run) abort(reason string) {
	if r.onAbort != nil {
		r.onAbort()
	}
	r.finish(reason, 0)
}

// complete finalizes pending steps and adds the never-started ones, as
// observe.mjs createRun's write does.
func (r *run) complete(reason string) {
	for rec := range r.pending {
		elapsed := since(rec.started)
		what := rec.kind
		if rec.Tool != "" {
			what += " " + rec.Tool
		}
		rec.Status, rec.DurationMs, rec.Error = "raised", elapsed, deadlineError(what, &elapsed, reason)
		rec.Result = nil
	}
	clear(r.pending)
	o := &r.obs
	if o.Initialize == nil {
		o.Initialize = &record{kind: "initialize", Status: "raised", Error: deadlineError("initialize", nil, "")}
	}
	if o.Initialize.Status != "ok" {
		o.Calls, o.Followup = []*record{}, nil
	} else {
		notStarted := func(kind, tool string) *record {
			return &record{kind: kind, Tool: tool, Status: "raised", Error: deadlineError(kind+" "+tool, nil, "")}
		}
		for _, c := range r.cell.Calls[len(o.Calls):] {
			o.Calls = append(o.Calls, notStarted("call", c.Name))
		}
		if o.Followup == nil && r.cell.Followup != nil {
			o.Followup = notStarted("followup", r.cell.Followup.Name)
		}
	}
	if r.dropped > 0 {
		o.TransportErrors = append(o.TransportErrors, errorInfo{Type: "AdapterTruncated",
			Message: fmt.Sprintf("%d further out-of-band error reports were not recorded", r.dropped)})
	}
}

// writeObservation writes v as JSON (UTF-8, non-ASCII as is) to a temporary
// file in the target's directory, fsyncs it and renames it into place, so a
// killed adapter never leaves half an observation.
func writeObservation(file string, v any) error {
	tmp := filepath.Join(filepath.Dir(file), fmt.Sprintf(".observation-%d.tmp", os.Getpid()))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	enc.SetEscapeHTML(false)
	err = enc.Encode(v)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// ---- Out-of-band reports through the SDK's logger ---------------------------

// logRecorder is the slog.Handler given to the SDK as ClientOptions.Logger:
// every record goes to stderr (evidence), and every record at Warn or above is
// an out-of-band report (the SDK logs there what it otherwise drops: jsonrpc2
// internal errors, tools excluded from tools/list, failed keepalive pings).
// Such a report becomes {type: "slog.Record", message: the log line, chain: the
// error attributes it carries}.
type logRecorder struct {
	text  slog.Handler
	run   *run
	attrs []slog.Attr
}

func newLogRecorder(r *run, w io.Writer) *logRecorder {
	return &logRecorder{text: slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}), run: r}
}

func (h *logRecorder) Enabled(ctx context.Context, l slog.Level) bool { return h.text.Enabled(ctx, l) }

func (h *logRecorder) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Level >= slog.LevelWarn {
		var line strings.Builder
		line.WriteString(rec.Level.String() + " " + rec.Message)
		var chain []errorInfo
		add := func(a slog.Attr) bool {
			fmt.Fprintf(&line, " %s=%v", a.Key, a.Value.Any())
			if err, ok := a.Value.Any().(error); ok && len(chain) < maxChain {
				chain = append(chain, errorRecord(err))
			}
			return true
		}
		for _, a := range h.attrs {
			add(a)
		}
		rec.Attrs(add)
		h.run.reportError(errorInfo{Type: "slog.Record", Message: line.String(), Chain: chain}, nil)
	}
	return h.text.Handle(ctx, rec)
}

func (h *logRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logRecorder{text: h.text.WithAttrs(attrs), run: h.run, attrs: append(append([]slog.Attr{}, h.attrs...), attrs...)}
}

func (h *logRecorder) WithGroup(name string) slog.Handler {
	return &logRecorder{text: h.text.WithGroup(name), run: h.run, attrs: h.attrs}
}
