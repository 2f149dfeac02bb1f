package publish

import (
	"context"
	"log/slog"
	"sync"
)

// itemLogger is p.log with an item's feed and external id, the attributes
// handed to the handler only when a record is logged: slog's text and JSON
// handlers format attributes in WithAttrs, eagerly, which cost every
// delivery that logs nothing at the configured level (a first pass at
// "warn" logs nothing per item) as much as one that does.
func itemLogger(l *slog.Logger, feedID, externalID string) *slog.Logger {
	// One allocation per item, the logger, handler and attributes in it.
	il := &itemLog{lazyAttrs: lazyAttrs{base: l.Handler()}}
	il.arr = [2]slog.Attr{slog.String("feed", feedID), slog.String("external_id", externalID)}
	il.attrs = il.arr[:]
	il.logger = *slog.New(&il.lazyAttrs)
	return &il.logger
}

// itemLog is what itemLogger makes, in one piece.
type itemLog struct {
	lazyAttrs
	arr    [2]slog.Attr
	logger slog.Logger
}

// lazyAttrs is a handler with attributes added on first use.
type lazyAttrs struct {
	base  slog.Handler
	attrs []slog.Attr
	once  sync.Once
	h     slog.Handler
}

func (l *lazyAttrs) handler() slog.Handler {
	l.once.Do(func() { l.h = l.base.WithAttrs(l.attrs) })
	return l.h
}

func (l *lazyAttrs) Enabled(ctx context.Context, level slog.Level) bool {
	return l.base.Enabled(ctx, level)
}

func (l *lazyAttrs) Handle(ctx context.Context, r slog.Record) error {
	return l.handler().Handle(ctx, r)
}

func (l *lazyAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return l.handler().WithAttrs(attrs)
}

func (l *lazyAttrs) WithGroup(name string) slog.Handler {
	return l.handler().WithGroup(name)
}
