package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/feedworker/feedworker/sandbox"
)

// cmdSandbox serves the local sandbox of the API until signalled.
func cmdSandbox(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := newFlags("sandbox", stderr)
	var opts sandbox.Options
	opts.FromEnv(os.Getenv) // flags, parsed next, win over the environment
	opts.RegisterFlags(fs)
	logLevel := fs.String("log-level", "info", "debug logs one line per request")
	logFormat := fs.String("log-format", "text", "text or json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	opts.Logger = logger
	srv, err := sandbox.New(opts)
	if err != nil {
		return err
	}
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:8089"
	}
	return srv.ListenAndServe(ctx, addr) // which logs where it listens
}

// newLogger builds the process logger from a level and a format name.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch format {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}
