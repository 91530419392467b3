// Package observe is the adapter contract (docs/adapters.md) for the Go adapters, the Go
// counterpart of clients/_support/observe.mjs and mcp_driver.mjs: the cell file and its options,
// the observation with its pending steps, the budget watchdog, Error records, the out-of-band
// errors an SDK logs, and the atomic write.
//
// An adapter supplies only what is specific to its SDK, an Adapter (how to connect, and a Session:
// list, call, close; how its errors carry JSON-RPC codes), and calls Main, which runs the steps of
// mcp_driver.mjs on one session and writes the observation:
//
//	func main() {
//		observe.Main(observe.Adapter{Name: "go-sdk", Module: "github.com/...", ...})
//	}
package observe

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

const (
	// MaxChain is how many causes an Error's chain holds at most (observe.mjs MAX_CHAIN).
	MaxChain = 10
	// MaxTransportErrors is how many out-of-band errors an observation keeps; further reports are
	// only counted, in one AdapterTruncated entry (observe.mjs MAX_TRANSPORT_ERRORS).
	MaxTransportErrors = 1000
)

// ---- Error records ----------------------------------------------------------

// Error is the contract's Error object.
type Error struct {
	Type    string          `json:"type"`
	Code    *int64          `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
	Chain   []Error         `json:"chain,omitempty"`
}

// A Coder reads the JSON-RPC error code (and data, nil for none) that err carries, the way its
// SDK exposes them to a Go caller (errors.As, errors.Is); ok is false when it carries none.
type Coder func(err error) (code int64, data json.RawMessage, ok bool)

// ErrorRecord turns an error into the contract's Error (observe.mjs errorRecord):
//   - type: its Go type (%T: *fmt.wrapError, *jsonrpc2.WireError, context.deadlineExceededError);
//   - message: err.Error();
//   - code and data: what codes reads from err, its whole wrap chain included, as a Go caller
//     reads them (codes may be nil: no codes);
//   - chain: the wrapped errors (Unwrap, and every member of an errors.Join or a multi-%w), depth
//     first, innermost last, at most MaxChain, each error (pointer) once, each entry flat: its own
//     type, message and code, the code only where it is not the one of an error it wraps.
func ErrorRecord(err error, codes Coder) Error {
	rec := flatRecord(err, codes)
	type identity struct {
		t reflect.Type
		p uintptr
	}
	seen := map[identity]bool{}
	var visit func(error)
	visit = func(e error) {
		for _, member := range unwrap(e) {
			if member == nil || len(rec.Chain) >= MaxChain {
				continue
			}
			if v := reflect.ValueOf(member); v.Kind() == reflect.Pointer {
				id := identity{v.Type(), v.Pointer()}
				if seen[id] {
					continue
				}
				seen[id] = true
			}
			entry := flatRecord(member, codes)
			if entry.Code != nil && inherited(member, *entry.Code, codes) {
				entry.Code, entry.Data = nil, nil
			}
			rec.Chain = append(rec.Chain, entry)
			visit(member)
		}
	}
	visit(err)
	return rec
}

func flatRecord(err error, codes Coder) Error {
	rec := Error{Type: fmt.Sprintf("%T", err), Message: err.Error()}
	if codes != nil {
		if code, data, ok := codes(err); ok {
			rec.Code, rec.Data = &code, nonNullJSON(data)
		}
	}
	return rec
}

// inherited is whether code comes to err from an error it wraps.
func inherited(err error, code int64, codes Coder) bool {
	for _, member := range unwrap(err) {
		if member == nil {
			continue
		}
		if c, _, ok := codes(member); ok && c == code {
			return true
		}
	}
	return false
}

func unwrap(err error) []error {
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		return u.Unwrap()
	case interface{ Unwrap() error }:
		return []error{u.Unwrap()}
	}
	return nil
}

func nonNullJSON(raw json.RawMessage) json.RawMessage {
	if s := strings.TrimSpace(string(raw)); s == "" || s == "null" || !json.Valid(raw) {
		return nil
	}
	return raw
}

// DeadlineError is the reserved AdapterTimeout Error (observe.mjs deadlineError) for a step the
// adapter's deadline ended after elapsedMs, or never let start (elapsedMs nil); reason, when not
// empty, says what stopped the adapter.
func DeadlineError(what string, elapsedMs *float64, reason string) *Error {
	message := "adapter deadline: " + what + " not started, the adapter's deadline had passed"
	if elapsedMs != nil {
		message = fmt.Sprintf("adapter deadline: %s ended by the adapter after %s ms", what, jsNumber(*elapsedMs))
	}
	if reason != "" {
		message += " (" + reason + ")"
	}
	return &Error{Type: "AdapterTimeout", Message: message}
}

// TruncatedError is the AdapterTruncated entry that ends transport_errors when dropped further
// reports were not kept (observe.mjs truncatedError).
func TruncatedError(dropped int) Error {
	return Error{Type: "AdapterTruncated", Message: fmt.Sprintf("%d further out-of-band error reports were not recorded", dropped)}
}

// jsNumber formats a number as JavaScript does (1500, 12.5).
func jsNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// ms is a duration in milliseconds, rounded to 0.1 ms (observe.mjs startTimer).
func ms(d time.Duration) float64 { return math.Round(float64(d)/1e5) / 10 }

// ---- The observation --------------------------------------------------------

// The kinds of step; a follow-up is a call kept in the observation's followup.
const (
	kindInitialize = "initialize"
	kindListTools  = "list_tools"
	kindCall       = "call"
	kindFollowup   = "followup"
	kindClose      = "close"
)

// observation is what an adapter writes, its keys in observe.mjs createRun's order.
type observation struct {
	Contract        int     `json:"contract"`
	PackageVersion  *string `json:"package_version"`
	RuntimeVersion  string  `json:"runtime_version"`
	Initialize      *step   `json:"initialize"`
	ListTools       *step   `json:"list_tools"`
	Calls           []*step `json:"calls"`
	Followup        *step   `json:"followup"`
	TransportErrors []Error `json:"transport_errors"`
	Close           *step   `json:"close"`
}

// step is one step of the observation: initialize, list_tools, a call, the follow-up or close.
// It is recorded as raised from begin on, and overwritten when it settles; its fields are guarded
// by its Run's lock.
type step struct {
	run             *Run
	kind            string
	tool            string
	status          string
	result          json.RawMessage // a returned call: the SDK's own JSON of its result
	err             *Error
	protocolVersion *string
	tools           []string
	durationMs      float64
	cancellable     bool     // the call had cancel_after_ms: once settled, its record has cancelled_after_ms
	cancelledAfter  *float64 // when the cancellation was issued; nil: the call settled first
	cancelTimer     *time.Timer
	begun, ended    time.Time
}

// isCall is whether the step has the shape of a call (a case's call or the follow-up).
func (s *step) isCall() bool { return s.kind == kindCall || s.kind == kindFollowup }

// MarshalJSON writes the keys of the step's kind, in the order the Node driver writes them.
func (s *step) MarshalJSON() ([]byte, error) {
	var fields []any // key, value, key, value, ...
	if s.isCall() {
		fields = append(fields, "tool", s.tool)
	}
	fields = append(fields, "status", s.status)
	if s.isCall() {
		fields = append(fields, "result", s.result)
	}
	fields = append(fields, "error", s.err)
	switch s.kind {
	case kindInitialize:
		fields = append(fields, "protocol_version", s.protocolVersion)
	case kindListTools:
		fields = append(fields, "tools", s.tools)
	}
	fields = append(fields, "duration_ms", s.durationMs)
	if s.cancellable {
		fields = append(fields, "cancelled_after_ms", s.cancelledAfter)
	}
	b := []byte{'{'}
	for i := 0; i < len(fields); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		key, _ := marshal(fields[i])
		text, err := marshal(fields[i+1]) // a nil json.RawMessage is null
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, key...), ':'), text...)
	}
	return append(b, '}'), nil
}

// notStarted is a call of the cell the adapter never started (observe.mjs notStarted).
func notStarted(kind, tool string) *step {
	return &step{kind: kind, tool: tool, status: "raised", err: DeadlineError(kind+" "+tool, nil, "")}
}

// resultJSON is a returned call's result in the SDK's own JSON form (its MarshalJSON); a result
// that cannot be serialized (not expected) is kept as its Go syntax, a JSON string.
func resultJSON(result any) json.RawMessage {
	raw, err := marshal(result)
	if err != nil {
		raw, _ = marshal(fmt.Sprintf("%+v", result))
	}
	return raw
}

// WriteObservation writes v as JSON (UTF-8, non-ASCII and <>& as they are) to a temporary file
// in the target's directory, fsyncs it and renames it into place, so that a killed adapter never
// leaves half an observation (observe.mjs writeObservation).
func WriteObservation(path string, v any) error {
	data, err := marshal(v)
	if err != nil {
		return err
	}
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

// ModuleVersion is the version of module compiled into this binary, without the "v" ("1.8.0"),
// that of its replacement where go.mod replaces it; nil when it is not a dependency.
func ModuleVersion(module string) *string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	for _, dep := range info.Deps {
		if dep.Path == module {
			if dep.Replace != nil {
				dep = dep.Replace
			}
			v := strings.TrimPrefix(dep.Version, "v")
			return &v
		}
	}
	return nil
}
