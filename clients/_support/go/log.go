package observe

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// logHandler is the slog.Handler behind Run.Logger. A Go SDK reports what goes wrong off a
// request's path (a frame it cannot read, a stream that broke, a failed keepalive ping) only by
// logging it; those records are the adapter's out-of-band errors, the counterpart of Node's
// transport.onerror. Every record at Warn or above, and every record that carries an error value,
// goes to transport_errors: {type, code, chain} of its (first) error, or type "slog.Record"
// without one, and the log line as message ("ERROR msg key=\"value\" ..."). Every record is also
// echoed on stderr, for the cell's evidence.
type logHandler struct {
	run   *Run
	echo  slog.Handler
	attrs []slog.Attr
}

func (h *logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *logHandler) Handle(ctx context.Context, rec slog.Record) error {
	_ = h.echo.Handle(ctx, rec)
	var cause error
	var line strings.Builder
	line.WriteString(rec.Level.String() + " " + rec.Message)
	collect := func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && cause == nil {
			cause = err
		}
		fmt.Fprintf(&line, " %s=%q", a.Key, a.Value.String())
		return true
	}
	for _, a := range h.attrs {
		collect(a)
	}
	rec.Attrs(collect)
	if rec.Level < slog.LevelWarn && cause == nil {
		return nil
	}
	report := Error{Type: "slog.Record", Message: line.String()}
	if cause != nil { // the logged error's own type, code and chain
		inner := h.run.Error(cause)
		report.Type, report.Code, report.Data, report.Chain = inner.Type, inner.Code, inner.Data, inner.Chain
	}
	h.run.ReportError(report)
	return nil
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logHandler{run: h.run, echo: h.echo.WithAttrs(attrs), attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{run: h.run, echo: h.echo.WithGroup(name), attrs: h.attrs}
}
