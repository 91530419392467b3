package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// Contract is the version of the cell file and of the observation (docs/adapters.md).
const Contract = 1

// CellKeys are the keys every contract-1 cell file must have (observe.mjs CELL_KEYS).
var CellKeys = []string{"cell_id", "options", "server", "calls", "followup", "call_timeout_ms", "budget_ms"}

// Transports are the cell transports an adapter on this package supports (mcp_driver.mjs TRANSPORTS).
var Transports = []string{"stdio", "http-json", "http-sse"}

// Call is one tool call of a cell: one of the case's calls, or the follow-up.
type Call struct {
	Name          string          `json:"name"`
	Arguments     json.RawMessage `json:"arguments"`
	CancelAfterMs json.RawMessage `json:"cancel_after_ms"`
}

// Args is what to hand the SDK as the call's arguments: the cell's JSON byte for byte (a
// json.RawMessage), or nil (no arguments) when the cell has none or null.
func (c Call) Args() any {
	if s := strings.TrimSpace(string(c.Arguments)); s == "" || s == "null" {
		return nil
	}
	return c.Arguments
}

// CancelAfter is the call's cancel_after_ms: nil when it is absent or null, else a non-negative
// integer (1000 and 1000.0 alike, as JSON cannot tell them apart), or an error with observe.mjs
// checkCancelAfter's message.
func (c Call) CancelAfter() (*time.Duration, error) {
	if s := strings.TrimSpace(string(c.CancelAfterMs)); s == "" || s == "null" {
		return nil, nil
	}
	var value any
	_ = json.Unmarshal(c.CancelAfterMs, &value)
	f, ok := value.(float64)
	if !ok || f < 0 || f != math.Trunc(f) {
		return nil, fmt.Errorf("cancel_after_ms: expected a non-negative integer, got %s", jsonText(value))
	}
	after := time.Duration(f) * time.Millisecond
	return &after, nil
}

// Server is where a cell's server is: a command to spawn (stdio) or a URL (http-*).
type Server struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     *string           `json:"url"`
}

// Environ is the server's env as KEY=VALUE entries, sorted, to add to os.Environ().
func (s Server) Environ() []string {
	env := make([]string, 0, len(s.Env))
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// Cell is a cell file (docs/adapters.md, "The cell file").
type Cell struct {
	CellID        string          `json:"cell_id"`
	Transport     string          `json:"transport"`
	Protocol      string          `json:"protocol"`
	Server        Server          `json:"server"`
	Calls         []Call          `json:"calls"`
	Followup      *Call           `json:"followup"`
	CallTimeoutMs float64         `json:"call_timeout_ms"`
	BudgetMs      float64         `json:"budget_ms"`
	Options       json.RawMessage `json:"options"`
}

// CallTimeout is call_timeout_ms, the deadline of each request's context.
func (c *Cell) CallTimeout() time.Duration {
	return time.Duration(c.CallTimeoutMs * float64(time.Millisecond))
}

// ReadCell reads a cell file and checks what observe.mjs readCell checks, with its messages: a
// JSON object, contract 1, every key of CellKeys. It also requires the follow-up to be a call.
func ReadCell(path string) (*Cell, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read cell file %s: %v", path, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		if !json.Valid(data) {
			return nil, fmt.Errorf("cannot read cell file %s: %v", path, err)
		}
		return nil, fmt.Errorf("%s: the cell is not a JSON object", path)
	}
	var contract any
	if raw, ok := top["contract"]; ok {
		_ = json.Unmarshal(raw, &contract)
	}
	if contract != float64(Contract) {
		return nil, fmt.Errorf("%s: contract %s is not supported (expected %d)", path, jsonText(contract), Contract)
	}
	var missing []string
	for _, key := range CellKeys {
		if _, ok := top[key]; !ok {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: missing key(s): %s", path, strings.Join(missing, ", "))
	}
	var c Cell
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if c.Followup == nil {
		return nil, fmt.Errorf("%s: followup: expected a call object", path)
	}
	return &c, nil
}

// Check is what mcp_driver.mjs checks of a cell before anything runs: a supported transport,
// server.url for http-*, and every call's cancel_after_ms.
func (c *Cell) Check() error {
	if !slices.Contains(Transports, c.Transport) {
		return fmt.Errorf("transport %s is not supported (%s)", jsonText(c.Transport), strings.Join(Transports, ", "))
	}
	if c.Transport != "stdio" && c.Server.URL == nil {
		return fmt.Errorf("transport %s needs server.url", c.Transport)
	}
	for _, call := range append(slices.Clone(c.Calls), *c.Followup) {
		if _, err := call.CancelAfter(); err != nil {
			return err
		}
	}
	return nil
}

// Options are a cell's variant options, as JSON decodes them (bool, float64, string).
type Options map[string]any

// Bool is the boolean option name, false when it is not set.
func (o Options) Bool(name string) bool {
	v, _ := o[name].(bool)
	return v
}

// CheckOptions checks a cell's options against the ones an adapter understands, known: option
// name -> JSON type ("boolean", "integer", "number", "string"). As observe.mjs checkOptions, it
// reports every problem, in the options' order, joined by "; ": an option it does not know, a
// value of another type (an integer is any integral number, 3.0 too; a boolean is never one).
func CheckOptions(raw json.RawMessage, known map[string]string) (Options, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		var v any
		_ = json.Unmarshal(raw, &v)
		return nil, fmt.Errorf("options: expected an object, got %s", jsonText(v))
	}
	names := make([]string, 0, len(known))
	for name := range known {
		names = append(names, name)
	}
	sort.Strings(names)
	understood := strings.Join(names, ", ")
	if understood == "" {
		understood = "none"
	}
	options := Options{}
	var problems []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("options: %v", err)
		}
		key, _ := tok.(string)
		var value any
		if err := dec.Decode(&value); err != nil {
			return nil, fmt.Errorf("options: %v", err)
		}
		want, ok := known[key]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("unknown option %s (this adapter understands: %s)", jsonText(key), understood))
		case !hasType(value, want):
			problems = append(problems, fmt.Sprintf("option %s: expected %s, got %s", jsonText(key), want, jsonText(value)))
		default:
			options[key] = value
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return options, nil
}

// hasType is JavaScript's typeof value === want, and Number.isInteger for "integer".
func hasType(value any, want string) bool {
	switch v := value.(type) {
	case bool:
		return want == "boolean"
	case string:
		return want == "string"
	case float64:
		return want == "number" || want == "integer" && v == math.Trunc(v)
	}
	return false
}

// jsonText is v as JSON text for messages (as JSON.stringify writes it: no HTML escaping).
func jsonText(v any) string {
	b, err := marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// marshal is json.Marshal without HTML escaping: text stays as the server sent it.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
