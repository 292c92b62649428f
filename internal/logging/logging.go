// Package logging builds the process logger (PLINTH_LOG_FORMAT,
// PLINTH_LOG_LEVEL) and the handlers that keep its lines worth reading:
// River's periodic chatter lowered to debug, and cancellations during a
// stop kept out of the errors.
package logging

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// Options choose the logger's format and level.
type Options struct {
	// Format is "json", "text", or "" for json unless Out is a terminal
	// (a person reads text; a collector parses JSON).
	Format string
	// Level is "debug", "info", "warn" or "error" ("" is info).
	Level string
}

// New returns the process logger writing to out.
func New(out io.Writer, o Options) (*slog.Logger, error) {
	var level slog.Level
	if o.Level != "" {
		if err := level.UnmarshalText([]byte(o.Level)); err != nil {
			return nil, fmt.Errorf("PLINTH_LOG_LEVEL: want debug, info, warn or error, got %q", o.Level)
		}
	}
	format := o.Format
	if format == "" {
		format = "json"
		if isTerminal(out) {
			format = "text"
		}
	}
	hopts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch format {
	case "json":
		h = slog.NewJSONHandler(out, hopts)
	case "text":
		h = slog.NewTextHandler(out, hopts)
	default:
		return nil, fmt.Errorf("PLINTH_LOG_FORMAT: want json or text, got %q", o.Format)
	}
	c := canceled{Handler: h}
	if b, ok := out.(*Buffer); ok {
		c.flush = b
	}
	return slog.New(c), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// canceled lowers to debug an error or warning whose error is a context
// cancellation: the process (or a client) ended the work on purpose, as
// every loop and job does when the server stops, and an operator must not
// read ten thousand such lines as faults.
// It also writes a warning or an error at once when the lines wait in a
// Buffer (flush).
type canceled struct {
	slog.Handler
	flush *Buffer
}

func (h canceled) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && isCancellation(r) {
		r.Level = slog.LevelDebug
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil // Enabled let every warning through to be looked at
	}
	err := h.Handler.Handle(ctx, r)
	if h.flush != nil && r.Level >= slog.LevelWarn {
		if ferr := h.flush.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h canceled) Enabled(ctx context.Context, l slog.Level) bool {
	// A warning or error may be lowered to debug in Handle, but it must
	// reach Handle to be looked at.
	return h.Handler.Enabled(ctx, l) || l >= slog.LevelWarn
}

func (h canceled) WithAttrs(as []slog.Attr) slog.Handler {
	return canceled{h.Handler.WithAttrs(as), h.flush}
}

func (h canceled) WithGroup(name string) slog.Handler {
	return canceled{h.Handler.WithGroup(name), h.flush}
}

func isCancellation(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		v := a.Value.Resolve()
		switch v.Kind() {
		case slog.KindAny:
			if err, ok := v.Any().(error); ok && errors.Is(err, context.Canceled) {
				found = true
			}
		case slog.KindString:
			// River and pgx report some errors as strings.
			if (a.Key == "err" || a.Key == "error") && strings.HasSuffix(v.String(), context.Canceled.Error()) {
				found = true
			}
		}
		return !found
	})
	return found
}

// Quiet returns a logger that writes l's info lines at debug. River logs
// its periodic statistics ("Producer job counts", elector and maintenance
// notes) at info, which made nine lines in ten of an idle server's log;
// its warnings and errors stay as they are.
func Quiet(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	return slog.New(quiet{l.Handler()})
}

type quiet struct{ slog.Handler }

func lower(l slog.Level) slog.Level {
	if l >= slog.LevelInfo && l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}

func (h quiet) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, lower(l))
}

func (h quiet) Handle(ctx context.Context, r slog.Record) error {
	r.Level = lower(r.Level)
	return h.Handler.Handle(ctx, r)
}

func (h quiet) WithAttrs(as []slog.Attr) slog.Handler { return quiet{h.Handler.WithAttrs(as)} }
func (h quiet) WithGroup(name string) slog.Handler    { return quiet{h.Handler.WithGroup(name)} }
