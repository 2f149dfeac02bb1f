package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/worker"
)

// cmdValidate prints every problem of a config file, or a one-line summary.
func cmdValidate(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("validate", stderr)
	path := fs.String("config", "", "the config file to check (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *path == "" {
		return errors.New("--config is required")
	}
	cfg, err := worker.LoadConfig(*path, buildVersion())
	if err != nil {
		var probs *config.Problems
		if errors.As(err, &probs) {
			for _, p := range probs.List {
				fmt.Fprintln(stdout, p.String())
			}
			fmt.Fprintf(stdout, "%s: %s\n", *path, plural(probs.Len(), "problem", "problems"))
			return exitError{code: 1}
		}
		return err
	}
	fmt.Fprintln(stdout, cfg.Summary())
	return nil
}
