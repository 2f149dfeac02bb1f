package publish

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
)

// TestItemLoggerSameAsWith checks that itemLogger writes what Logger.With
// writes, through groups and further attributes.
func TestItemLoggerSameAsWith(t *testing.T) {
	var a, b bytes.Buffer
	opts := &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: func(_ []string, at slog.Attr) slog.Attr {
		if at.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return at
	}}
	want := slog.New(slog.NewTextHandler(&a, opts)).With("feed", "f1", "external_id", "e 1")
	got := itemLogger(slog.New(slog.NewTextHandler(&b, opts)), "f1", "e 1")
	for _, l := range []*slog.Logger{want, got} {
		l.Info("published", "content_id", 7)
		l.Debug("not at this level")
		l.With("attempt", 2).Warn("retry")
		l.WithGroup("g").Error("failed", "status", 500)
	}
	if a.String() != b.String() {
		t.Errorf("itemLogger wrote\n%s\nLogger.With wrote\n%s", b.String(), a.String())
	}
}

// countingHandler counts the WithAttrs calls that reach it.
type countingHandler struct {
	slog.Handler
	withAttrs *int
}

func (c countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	*c.withAttrs++
	return countingHandler{c.Handler.WithAttrs(as), c.withAttrs}
}

// TestItemLoggerLazy checks that the item's attributes reach the handler
// only once something is logged.
func TestItemLoggerLazy(t *testing.T) {
	var n int
	var out bytes.Buffer
	base := slog.New(countingHandler{slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}), &n})
	l := itemLogger(base, "f", "e")
	l.Info("skipped")
	if l.Enabled(context.Background(), slog.LevelInfo) || n != 0 || out.Len() != 0 {
		t.Fatalf("after a record below the level: %d WithAttrs calls, output %q", n, out.String())
	}
	l.Warn("kept")
	l.Warn("kept again")
	if n != 1 || !bytes.Contains(out.Bytes(), []byte("feed=f external_id=e")) {
		t.Fatalf("after two records: %d WithAttrs calls (want 1), output %q", n, out.String())
	}
}
