package observe

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const goodCell = `{"contract": 1, "cell_id": "c", "options": {}, "transport": "stdio",
 "server": {"command": "srv", "args": [], "env": {}, "url": null},
 "calls": [{"name": "get", "arguments": {"id": "A"}}], "followup": {"name": "echo", "arguments": {}},
 "call_timeout_ms": 20000, "budget_ms": 30000}`

func writeTemp(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cell.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// withKey is goodCell with key set to value (a JSON text), or removed when value is "".
func withKey(key, value string) string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal([]byte(goodCell), &m)
	if value == "" {
		delete(m, key)
	} else {
		m[key] = json.RawMessage(value)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// without is goodCell without keys.
func without(keys ...string) string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal([]byte(goodCell), &m)
	for _, key := range keys {
		delete(m, key)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestReadCell(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string // want: the message after the path, "" for a good cell
	}{
		{"good", goodCell, ""},
		{"contract 1.0 is 1", withKey("contract", "1.0"), ""},
		{"not JSON", "{", "cannot read cell file"},
		{"not an object", "[1]", ": the cell is not a JSON object"},
		{"null", "null", ": the cell is not a JSON object"},
		{"contract 2", withKey("contract", "2"), `: contract 2 is not supported (expected 1)`},
		{"contract string", withKey("contract", `"1"`), `: contract "1" is not supported (expected 1)`},
		{"no contract", withKey("contract", ""), `: contract null is not supported (expected 1)`},
		{"missing keys", without("followup", "options"), ": missing key(s): options, followup"},
		{"followup null", withKey("followup", "null"), ": followup: expected a call object"},
		{"wrong type", withKey("calls", "5"), ": json: cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, tc.text)
			cell, err := ReadCell(path)
			if tc.want == "" {
				if err != nil || cell.Followup.Name != "echo" || cell.Calls[0].Name != "get" {
					t.Fatalf("ReadCell = %+v, %v", cell, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := ReadCell("/nonexistent/cell.json"); err == nil || !strings.HasPrefix(err.Error(), "cannot read cell file /nonexistent/cell.json: ") {
		t.Fatalf("unreadable: %v", err)
	}
}

func TestCheckOptions(t *testing.T) {
	known := map[string]string{"list_tools": "boolean", "max": "integer", "ratio": "number", "mode": "string"}
	for _, tc := range []struct {
		name, options, want string // want: the error, "" for none
	}{
		{"empty", `{}`, ""},
		{"all types", `{"list_tools": true, "max": 3, "ratio": 0.5, "mode": "a"}`, ""},
		{"integral float is an integer", `{"max": 3.0}`, ""},
		{"integer number", `{"ratio": 2}`, ""},
		{"not an object", `[1, 2]`, "options: expected an object, got [1,2]"},
		{"null", `null`, "options: expected an object, got null"},
		{"unknown", `{"list_tool": true}`, `unknown option "list_tool" (this adapter understands: list_tools, max, mode, ratio)`},
		{"fraction", `{"max": 1.5}`, `option "max": expected integer, got 1.5`},
		{"boolean is no integer", `{"max": true}`, `option "max": expected integer, got true`},
		{"string", `{"list_tools": "yes"}`, `option "list_tools": expected boolean, got "yes"`},
		{"every problem, in order", `{"b": 1, "mode": 2, "list_tools": false, "a<b>": null}`,
			`unknown option "b" (this adapter understands: list_tools, max, mode, ratio); ` +
				`option "mode": expected string, got 2; ` +
				`unknown option "a<b>" (this adapter understands: list_tools, max, mode, ratio)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			options, err := CheckOptions(json.RawMessage(tc.options), known)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("error %q, want %q", got, tc.want)
			}
			if err == nil && len(options) != strings.Count(tc.options, ":") {
				t.Fatalf("options %v", options)
			}
		})
	}
	if _, err := CheckOptions(json.RawMessage(`{"x": 1}`), nil); err == nil || err.Error() != `unknown option "x" (this adapter understands: none)` {
		t.Fatalf("no options known: %v", err)
	}
	if options, _ := CheckOptions(json.RawMessage(`{"list_tools": true}`), known); !options.Bool("list_tools") || options.Bool("max") {
		t.Fatalf("Bool: %v", options)
	}
}

func TestCellCheck(t *testing.T) {
	for _, tc := range []struct {
		name, key, value, want string
	}{
		{"good", "transport", `"stdio"`, ""},
		{"http with url", "server", `{"url": "http://127.0.0.1:1/mcp"}`, ""},
		{"unknown transport", "transport", `"ws"`, `transport "ws" is not supported (stdio, http-json, http-sse)`},
		{"http without url", "transport", `"http-sse"`, "transport http-sse needs server.url"},
		{"cancel_after_ms null", "calls", `[{"name": "a", "cancel_after_ms": null}]`, ""},
		{"cancel_after_ms 0", "calls", `[{"name": "a", "cancel_after_ms": 0}]`, ""},
		{"cancel_after_ms 1000.0", "calls", `[{"name": "a", "cancel_after_ms": 1000.0}]`, ""},
		{"cancel_after_ms negative", "calls", `[{"name": "a", "cancel_after_ms": -1}]`, "cancel_after_ms: expected a non-negative integer, got -1"},
		{"cancel_after_ms fraction", "calls", `[{"name": "a", "cancel_after_ms": 1.5}]`, "cancel_after_ms: expected a non-negative integer, got 1.5"},
		{"cancel_after_ms string", "followup", `{"name": "echo", "cancel_after_ms": "5"}`, `cancel_after_ms: expected a non-negative integer, got "5"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := withKey(tc.key, tc.value)
			if tc.key == "server" {
				text = strings.Replace(withKey(tc.key, tc.value), `"transport":"stdio"`, `"transport":"http-json"`, 1)
			}
			cell, err := ReadCell(writeTemp(t, text))
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if err := cell.Check(); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("Check: %q, want %q", got, tc.want)
			}
		})
	}
	after, err := Call{CancelAfterMs: json.RawMessage("250")}.CancelAfter()
	if err != nil || *after != 250*time.Millisecond {
		t.Fatalf("CancelAfter = %v, %v", after, err)
	}
	if args := (Call{Arguments: json.RawMessage("null")}).Args(); args != nil {
		t.Fatalf("Args of null = %#v", args)
	}
}

// wireError is an SDK's JSON-RPC error for the tests.
type wireError struct {
	code int64
	data string
}

func (e *wireError) Error() string { return fmt.Sprintf("wire %d", e.code) }

func wireCodes(err error) (int64, json.RawMessage, bool) {
	var wire *wireError
	if errors.As(err, &wire) {
		return wire.code, json.RawMessage(wire.data), true
	}
	return 0, nil, false
}

func TestErrorRecord(t *testing.T) {
	wire := &wireError{code: -32602, data: `{"field": "x"}`}
	leaf := errors.New("leaf")
	deep := error(leaf)
	for i := range 12 {
		deep = fmt.Errorf("level %d: %w", i, deep)
	}
	code := func(c int64) *int64 { return &c }
	for _, tc := range []struct {
		name string
		err  error
		want Error
	}{
		{"plain", leaf, Error{Type: "*errors.errorString", Message: "leaf"}},
		{"wire error", wire, Error{Type: "*observe.wireError", Code: code(-32602), Message: "wire -32602", Data: json.RawMessage(`{"field": "x"}`)}},
		{"null data dropped", &wireError{code: 1, data: "null"}, Error{Type: "*observe.wireError", Code: code(1), Message: "wire 1"}},
		{"wrapped: the code as a caller reads it, the chain's own codes", fmt.Errorf("calling: %w", fmt.Errorf("sending: %w", wire)), Error{
			Type: "*fmt.wrapError", Code: code(-32602), Message: "calling: sending: wire -32602", Data: json.RawMessage(`{"field": "x"}`),
			Chain: []Error{
				{Type: "*fmt.wrapError", Message: "sending: wire -32602"},
				{Type: "*observe.wireError", Code: code(-32602), Message: "wire -32602", Data: json.RawMessage(`{"field": "x"}`)},
			}}},
		{"join: depth first, each error once", errors.Join(fmt.Errorf("a: %w", leaf), leaf, errors.New("b")), Error{
			Type: "*errors.joinError", Message: "a: leaf\nleaf\nb",
			Chain: []Error{
				{Type: "*fmt.wrapError", Message: "a: leaf"},
				{Type: "*errors.errorString", Message: "leaf"},
				{Type: "*errors.errorString", Message: "b"},
			}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := json.Marshal(ErrorRecord(tc.err, wireCodes))
			want, _ := json.Marshal(tc.want)
			if string(got) != string(want) {
				t.Fatalf("\n got %s\nwant %s", got, want)
			}
		})
	}
	if rec := ErrorRecord(deep, nil); len(rec.Chain) != MaxChain || rec.Chain[0].Message != "level 10: "+strings.SplitN(deep.Error(), ": ", 3)[2] {
		t.Fatalf("chain of %d, first %q", len(rec.Chain), rec.Chain[0].Message)
	}
}

func TestDeadlineError(t *testing.T) {
	elapsed := 1500.5
	for _, tc := range []struct {
		got  *Error
		want string
	}{
		{DeadlineError("call get", &elapsed, "budget watchdog at 28500 ms of 30000 ms"),
			"adapter deadline: call get ended by the adapter after 1500.5 ms (budget watchdog at 28500 ms of 30000 ms)"},
		{DeadlineError("followup echo", nil, ""), "adapter deadline: followup echo not started, the adapter's deadline had passed"},
	} {
		if tc.got.Type != "AdapterTimeout" || tc.got.Code != nil || tc.got.Message != tc.want {
			t.Errorf("%+v, want %q", tc.got, tc.want)
		}
	}
}

// TestComplete: what a run writes when it stops early (observe.mjs createRun's write).
func TestComplete(t *testing.T) {
	cell, err := ReadCell(writeTemp(t, withKey("calls", `[{"name": "a", "cancel_after_ms": 5}, {"name": "b"}]`)))
	if err != nil {
		t.Fatal(err)
	}
	r := &Run{Cell: cell, pending: map[*step]bool{}, obs: observation{Calls: []*step{}, TransportErrors: []Error{}}}
	r.begin(kindInitialize, "").settle(nil, nil)
	call := r.begin(kindCall, "a")
	call.cancellable = true
	for range MaxTransportErrors + 3 {
		r.ReportError(Error{Type: "slog.Record", Message: "x"})
	}
	r.complete("received SIGTERM")
	got, _ := json.Marshal(r.obs.Calls)
	got = regexp.MustCompile(`after [0-9.]+ ms|"duration_ms":[0-9.]+`).ReplaceAllFunc(got, func(b []byte) []byte {
		return regexp.MustCompile(`[0-9.]+`).ReplaceAll(b, []byte("N"))
	})
	want := `[{"tool":"a","status":"raised","result":null,"error":{"type":"AdapterTimeout","code":null,"message":"adapter deadline: call a ended by the adapter after N ms (received SIGTERM)"},"duration_ms":N},` +
		`{"tool":"b","status":"raised","result":null,"error":{"type":"AdapterTimeout","code":null,"message":"adapter deadline: call b not started, the adapter's deadline had passed"},"duration_ms":N}]`
	if string(got) != want {
		t.Fatalf("calls\n got %s\nwant %s", got, want)
	}
	if r.obs.Followup == nil || r.obs.Followup.err.Message != "adapter deadline: followup echo not started, the adapter's deadline had passed" {
		t.Fatalf("followup %+v", r.obs.Followup)
	}
	errs := r.obs.TransportErrors
	if len(errs) != MaxTransportErrors+1 || errs[MaxTransportErrors].Type != "AdapterTruncated" ||
		errs[MaxTransportErrors].Message != "3 further out-of-band error reports were not recorded" {
		t.Fatalf("%d transport errors, last %+v", len(errs), errs[len(errs)-1])
	}
	initialize, _ := json.Marshal(r.obs.Initialize)
	if !strings.HasPrefix(string(initialize), `{"status":"ok","error":null,"protocol_version":null,"duration_ms":`) {
		t.Fatalf("initialize %s", initialize)
	}
}

func TestWriteObservation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "observation.json")
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"text as it is", map[string]string{"text": "café <b>&</b> \u2028"}, `{"text":"café <b>&</b> \u2028"}`},
		{"replaces the previous one", []int{1}, `[1]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := WriteObservation(path, tc.v); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if string(got) != tc.want {
				t.Fatalf("wrote %s, want %s", got, tc.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Fatalf("left %d files", len(entries))
			}
		})
	}
	if err := WriteObservation(filepath.Join(dir, "missing", "observation.json"), 1); err == nil {
		t.Fatal("wrote into a missing directory")
	}
	if err := WriteObservation(filepath.Join(dir, "bad.json"), func() {}); err == nil {
		t.Fatal("wrote a function")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("a failed write left %d files", len(entries))
	}
}
