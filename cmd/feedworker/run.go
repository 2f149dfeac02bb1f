package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/worker"
)

// common are the flags every config-driven command takes.
type common struct {
	config    *string
	logLevel  *string
	logFormat *string
}

func commonFlags(fs *flag.FlagSet) common {
	return common{
		config:    fs.String("config", "", "the config file (required)"),
		logLevel:  fs.String("log-level", "", "debug, info, warn or error (default: the config's log.level)"),
		logFormat: fs.String("log-format", "", "text or json (default: the config's log.format)"),
	}
}

// load reads the config and builds the logger it asks for.
func (c common) load(stderr io.Writer) (*config.Config, *slog.Logger, error) {
	if *c.config == "" {
		return nil, nil, errors.New("--config is required")
	}
	cfg, err := worker.LoadConfig(*c.config, buildVersion())
	if err != nil {
		var probs *config.Problems
		if errors.As(err, &probs) {
			return nil, nil, fmt.Errorf("invalid config (run feedworker validate --config %s):\n%w", *c.config, err)
		}
		return nil, nil, err
	}
	level, format := cfg.Log.Level, cfg.Log.Format
	if *c.logLevel != "" {
		level = *c.logLevel
	}
	if *c.logFormat != "" {
		format = *c.logFormat
	}
	logger, err := newLogger(stderr, level, format)
	if err != nil {
		return nil, nil, err
	}
	return cfg, logger, nil
}

func (c common) worker(ctx context.Context, stdout, stderr io.Writer) (*worker.Worker, *config.Config, error) {
	cfg, logger, err := c.load(stderr)
	if err != nil {
		return nil, nil, err
	}
	worker.SetMemoryLimit(cfg.Process, logger)
	w, err := worker.New(ctx, worker.Options{Config: cfg, Version: buildVersion(), Logger: logger, Out: stdout})
	if err != nil {
		return nil, nil, err
	}
	return w, cfg, nil
}

// openWorker parses the common flags of a command that takes no others and
// builds the worker its config describes.
func openWorker(ctx context.Context, name string, args []string, stdout, stderr io.Writer) (*worker.Worker, error) {
	fs := newFlags(name, stderr)
	c := commonFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	w, _, err := c.worker(ctx, stdout, stderr)
	return w, err
}

// cmdRun polls and publishes until SIGINT or SIGTERM; SIGHUP reloads.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	w, err := openWorker(ctx, "run", args, stdout, stderr)
	if err != nil {
		return err
	}
	defer w.Close()

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reload := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				select {
				case reload <- struct{}{}:
				default: // a reload is already pending
				}
			}
		}
	}()
	return w.Run(ctx, reload)
}

// cmdOnce makes one pass over every feed and exits non-zero if any failed.
func cmdOnce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	w, err := openWorker(ctx, "once", args, stdout, stderr)
	if err != nil {
		return err
	}
	defer w.Close()
	_, err = w.Once(ctx)
	var fe *worker.FeedErrors
	if errors.As(err, &fe) {
		fmt.Fprintln(stderr, fe.Error())
		return exitError{code: 1}
	}
	return err
}
