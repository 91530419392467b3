package observe

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
)

// CloseWait bounds the close step (mcp_driver.mjs CLOSE_WAIT_MS); it also ends no later than
// 200 ms before the watchdog. When close has not returned by then, the server child is killed.
const CloseWait = 6 * time.Second

// processStart is when the process started: the budget counts from here (Node's performance.now()).
var processStart = time.Now()

// Adapter is the part of an adapter that is specific to its SDK (mcp_driver.mjs Sdk).
type Adapter struct {
	// Name is the adapter's name, for its messages on stderr ("go-sdk adapter: ...").
	Name string
	// Module is the Go module whose compiled-in version is the observation's package_version.
	Module string
	// Options maps each variant option the adapter understands to its JSON type (CheckOptions).
	// "list_tools" means what docs/adapters.md says: Main lists the tools before the calls.
	Options map[string]string
	// Codes reads the JSON-RPC code an error of the SDK carries (ErrorRecord).
	Codes Coder
	// Connect makes the SDK's client for the run's cell (Run.Cell: its transport and server; a
	// stdio server it spawns is handed to Run.Child) and runs its initialize handshake, bounded
	// by Run.RequestContext. The session is returned even when the handshake failed if there is
	// something to close; nil when there is not.
	Connect func(r *Run) (Session, error)
}

// Session is one connected client of the SDK.
type Session interface {
	// ProtocolVersion is the revision the client agreed on, nil when it does not expose one; it
	// is also asked after a failed handshake.
	ProtocolVersion() *string
	// ListTools is tools/list: the names of the tools.
	ListTools(ctx context.Context) ([]string, error)
	// CallTool is one tools/call; arguments is Call.Args. It returns the result as the client
	// exposes it to its caller; Main records its JSON form (its MarshalJSON).
	CallTool(ctx context.Context, name string, arguments any) (any, error)
	// Close is the client's normal close.
	Close() error
}

// Run is the observation of one cell, guarded by one lock (the SDK's goroutines, the watchdog
// and the steps all touch it). The observation is complete at every moment: a step is entered as
// pending before it is awaited, so whatever stops the run (the watchdog, a signal, the end) writes
// the facts gathered so far, naming the step that had not settled.
type Run struct {
	// Cell is the cell file; Options its checked options.
	Cell    *Cell
	Options Options
	// Child is the stdio server process, killed when the adapter stops waiting.
	Child Child

	name     string
	codes    Coder
	path     string
	logger   *slog.Logger
	deadline time.Duration // the watchdog, from process start

	mu      sync.Mutex
	obs     observation
	pending map[*step]bool
	dropped int // out-of-band errors beyond MaxTransportErrors
	written bool
}

// Main runs one cell (the command line: `adapter <cell.json> <observation.json>`) with the steps
// of mcp_driver.mjs on one session: Connect (the initialize step), ListTools when the variant's
// list_tools is true, every call of the cell, the follow-up, Close. Every request's context has
// the call timeout (RequestContext); a call with cancel_after_ms has its context cancelled that
// many ms after it started (Go's idiomatic cancellation), and its record gets
// cancelled_after_ms. Main writes the observation and exits 0, whatever the client did; a bad
// command line, cell or option exits 2 before anything runs, a panic of the adapter exits 1
// after writing what was gathered.
func Main(a Adapter) {
	r := start(a)
	defer r.recoverPanic()
	r.finish(r.drive(a), 0)
}

// start checks the command line, the cell and its options, and starts the watchdog at the budget
// minus 5 % (0.5 to 2 s) from process start and the SIGTERM / SIGINT handlers: each writes what
// was gathered and exits 0 (observe.mjs createRun).
func start(a Adapter) *Run {
	fail := func(message string) {
		fmt.Fprintf(os.Stderr, "%s adapter: %s\n", a.Name, message)
		os.Exit(2)
	}
	if len(os.Args) != 3 {
		fail("usage: adapter <cell.json> <observation.json>")
	}
	cell, err := ReadCell(os.Args[1])
	if err != nil {
		fail(err.Error())
	}
	options, err := CheckOptions(cell.Options, a.Options)
	if err != nil {
		fail(err.Error())
	}
	if err := cell.Check(); err != nil {
		fail(err.Error())
	}
	margin := math.Min(2000, math.Max(500, cell.BudgetMs*0.05))
	deadlineMs := cell.BudgetMs - margin
	r := &Run{
		Cell: cell, Options: options,
		name: a.Name, codes: a.Codes, path: os.Args[2],
		deadline: time.Duration(deadlineMs * float64(time.Millisecond)),
		obs: observation{
			Contract: Contract, PackageVersion: ModuleVersion(a.Module), RuntimeVersion: runtime.Version(),
			Calls: []*step{}, TransportErrors: []Error{},
		},
		pending: map[*step]bool{},
	}
	r.logger = slog.New(&logHandler{run: r, echo: slog.NewTextHandler(os.Stderr, nil)})
	time.AfterFunc(r.untilDeadline(), func() {
		r.abort(fmt.Sprintf("budget watchdog at %.0f ms of %s ms", math.Round(deadlineMs), jsNumber(cell.BudgetMs)))
	})
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		name := map[os.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}[<-signals]
		r.abort("received " + name)
	}()
	return r
}

// drive runs the steps of one session and returns the reason to finish with.
func (r *Run) drive(a Adapter) string {
	initialize := r.begin(kindInitialize, "")
	session, err := a.Connect(r)
	var version *string
	if session != nil {
		version = session.ProtocolVersion()
	}
	initialize.settle(err, func(s *step) { s.protocolVersion = version })

	if err == nil {
		if r.Options.Bool("list_tools") {
			list := r.begin(kindListTools, "")
			ctx, cancel := r.RequestContext()
			tools, err := session.ListTools(ctx)
			cancel()
			list.settle(err, func(s *step) {
				if err == nil {
					s.tools = append([]string{}, tools...)
				}
			})
		}
		for _, call := range r.Cell.Calls {
			r.call(session, kindCall, call)
		}
		r.call(session, kindFollowup, *r.Cell.Followup)
	}
	if session == nil {
		return "finished"
	}
	return r.closeStep(session.Close)
}

// call makes one call of the cell and records it (mcp_driver.mjs callStep). Its context has the
// call timeout and, with cancel_after_ms, is cancelled that many ms after the call started;
// cancelled_after_ms is when the cancellation was issued, null when the call returned first.
func (r *Run) call(session Session, kind string, call Call) {
	s := r.begin(kind, call.Name)
	ctx, cancel := r.RequestContext()
	defer cancel()
	if after, _ := call.CancelAfter(); after != nil { // checked by Cell.Check
		r.mu.Lock()
		s.cancellable = true
		s.cancelTimer = time.AfterFunc(*after, func() {
			r.mu.Lock()
			issue := s.ended.IsZero()
			if issue {
				at := ms(time.Since(s.begun))
				s.cancelledAfter = &at
			}
			r.mu.Unlock()
			if issue {
				cancel()
			}
		})
		r.mu.Unlock()
	}
	result, err := session.CallTool(ctx, call.Name, call.Args())
	s.returned()
	var raw []byte
	if err == nil {
		raw = resultJSON(result) // outside the lock; the duration ended when CallTool returned
	}
	s.settle(err, func(s *step) {
		if err == nil {
			s.status, s.result = "returned", raw
		}
	})
}

// closeStep is the close step: closeSession awaited at most CloseWait, and no later than 200 ms
// before the watchdog; when it does not return in time, the server child is killed
// (observe.mjs closeStep).
func (r *Run) closeStep(closeSession func() error) string {
	s := r.begin(kindClose, "")
	wait := max(0, min(CloseWait, r.untilDeadline()-200*time.Millisecond))
	done := make(chan struct{})
	go func() {
		s.settle(closeSession(), nil)
		close(done)
	}()
	select {
	case <-done:
		return "finished"
	case <-time.After(wait):
		r.Child.Kill()
		return fmt.Sprintf("close wait bound of %d ms", (wait+time.Millisecond/2)/time.Millisecond)
	}
}

// begin enters a pending step of kind ("initialize", "list_tools", "call", "followup", "close";
// tool: the call's tool) into the observation, recorded as raised until it settles.
func (r *Run) begin(kind, tool string) *step {
	s := &step{run: r, kind: kind, tool: tool, status: "raised", begun: time.Now()}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending[s] = true
	switch kind {
	case kindInitialize:
		r.obs.Initialize = s
	case kindListTools:
		r.obs.ListTools = s
	case kindCall:
		r.obs.Calls = append(r.obs.Calls, s)
	case kindFollowup:
		r.obs.Followup = s
	case kindClose:
		r.obs.Close = s
	}
	return s
}

// returned marks when the step's SDK call returned: its duration ends here, and a cancellation
// not yet issued no longer is.
func (s *step) returned() {
	s.run.mu.Lock()
	defer s.run.mu.Unlock()
	s.ended = time.Now()
	if s.cancelTimer != nil {
		s.cancelTimer.Stop()
	}
}

// settle records how a step ended: raised with err's Error, or ok (a call: fill sets it returned);
// fill, when not nil, sets the step's other fields. All under the run's lock; nothing changes
// once the observation is written.
func (s *step) settle(err error, fill func(*step)) {
	r := s.run
	var rec *Error
	if err != nil {
		e := r.Error(err)
		rec = &e
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written {
		return
	}
	delete(r.pending, s)
	if s.ended.IsZero() {
		s.ended = time.Now()
	}
	s.durationMs = ms(s.ended.Sub(s.begun))
	s.err = rec
	if err == nil && !s.isCall() {
		s.status = "ok"
	}
	if fill != nil {
		fill(s)
	}
}

// RequestContext is the context of one request: its deadline is the cell's call timeout (a Go
// SDK has no request timeout of its own; a Go caller bounds a request with its context).
func (r *Run) RequestContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), r.Cell.CallTimeout())
}

// Error is err as the contract's Error, with the adapter's Codes (ErrorRecord).
func (r *Run) Error(err error) Error { return ErrorRecord(err, r.codes) }

// ReportError records an out-of-band error; beyond MaxTransportErrors they are only counted.
func (r *Run) ReportError(e Error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.obs.TransportErrors) >= MaxTransportErrors {
		r.dropped++
		return
	}
	r.obs.TransportErrors = append(r.obs.TransportErrors, e)
}

// Logger is the logger to give the SDK: every record is echoed on stderr, and what it logs as
// going wrong is an out-of-band error of the observation (see logHandler).
func (r *Run) Logger() *slog.Logger { return r.logger }

// untilDeadline is how long is left before the watchdog writes the observation.
func (r *Run) untilDeadline() time.Duration { return r.deadline - time.Since(processStart) }

// abort is an early end (the watchdog, a signal): it kills the server child, then writes and
// exits 0.
func (r *Run) abort(reason string) {
	r.Child.Kill()
	r.finish(reason, 0)
}

// recoverPanic is a bug of the adapter: it says so on stderr, writes what was gathered and exits
// 1 (mcp_driver.mjs: internal error, then observe.mjs's exit hook).
func (r *Run) recoverPanic() {
	if p := recover(); p != nil {
		fmt.Fprintf(os.Stderr, "%s adapter: internal error: %v\n%s", r.name, p, debug.Stack())
		r.Child.Kill()
		r.finish("process exiting with code 1", 1)
	}
}

// finish writes the observation (once) and exits with code.
func (r *Run) finish(reason string, code int) {
	r.mu.Lock() // held until exit: nothing changes the observation after this
	if !r.written {
		r.written = true
		r.complete(reason)
		if err := WriteObservation(r.path, &r.obs); err != nil {
			fmt.Fprintf(os.Stderr, "%s adapter: cannot write the observation: %v\n", r.name, err)
			os.Exit(1)
		}
	}
	os.Exit(code)
}

// complete makes the observation what the contract requires, as observe.mjs createRun's write
// does: a step still pending is raised with an AdapterTimeout naming reason; after a successful
// initialize, the calls and follow-up never started are raised AdapterTimeout "not started"; an
// AdapterTruncated entry counts the out-of-band errors not kept.
func (r *Run) complete(reason string) {
	for s := range r.pending {
		elapsed := ms(time.Since(s.begun))
		what := s.kind
		if s.isCall() {
			what = kindCall + " " + s.tool // the Node driver's name of a pending call, the follow-up's too
		}
		s.status, s.result, s.durationMs, s.err = "raised", nil, elapsed, DeadlineError(what, &elapsed, reason)
		s.cancellable = false // cancelled_after_ms is a settled call's, as in the Node driver
	}
	clear(r.pending)
	o := &r.obs
	if o.Initialize == nil {
		o.Initialize = &step{kind: kindInitialize, status: "raised", err: DeadlineError(kindInitialize, nil, "")}
	}
	if o.Initialize.status != "ok" {
		o.Calls, o.Followup = []*step{}, nil
	} else {
		for _, call := range r.Cell.Calls[len(o.Calls):] {
			o.Calls = append(o.Calls, notStarted(kindCall, call.Name))
		}
		if o.Followup == nil {
			o.Followup = notStarted(kindFollowup, r.Cell.Followup.Name)
		}
	}
	if r.dropped > 0 {
		o.TransportErrors = append(o.TransportErrors, TruncatedError(r.dropped))
	}
}

// Child is the stdio server process the SDK spawned, so that the adapter can kill it when it
// stops waiting for the client (the watchdog, the close wait bound).
type Child struct {
	mu      sync.Mutex
	process *os.Process
}

// Started records cmd's process, once the SDK has started it.
func (c *Child) Started(cmd *exec.Cmd) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		c.process = cmd.Process
	}
}

// Kill SIGKILLs the server child, if one was started.
func (c *Child) Kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.process != nil {
		_ = c.process.Kill()
	}
}
