package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/worker"
)

const deadLettersUsage = "usage: feedworker deadletters list|retry --config F [ID... | --all]"

// isHelp reports whether a command's first argument asks for its help.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// withUsage makes fs print line above its flags when -h is given.
func withUsage(fs *flag.FlagSet, line string) *flag.FlagSet {
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), line)
		fs.PrintDefaults()
	}
	return fs
}

// cmdDeadLetters lists dead letters or queues them again. With Redis it
// opens the store; with the embedded store, whose file a running worker
// locks, it asks that worker through its admin endpoint when one answers,
// else it opens the file. A running worker (or the next `once`) delivers
// what is queued.
func cmdDeadLetters(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := func(name string) (*flag.FlagSet, common, *bool) {
		fs := withUsage(newFlags("deadletters "+name, stderr), deadLettersUsage)
		c := commonFlags(fs)
		all := fs.Bool("all", false, "with retry: every dead letter")
		return fs, c, all
	}
	if len(args) == 0 || isHelp(args[0]) {
		fs, _, _ := flags("")
		fs.Usage()
		if len(args) == 0 {
			return exitError{code: 2}
		}
		return flag.ErrHelp
	}
	sub := args[0]
	if sub != "list" && sub != "retry" {
		return fmt.Errorf("unknown subcommand %q; %s", sub, deadLettersUsage)
	}
	fs, c, all := flags(sub)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	ids := fs.Args()
	if sub == "retry" {
		switch {
		case *all && len(ids) > 0:
			return errors.New("give IDs or --all, not both")
		case !*all && len(ids) == 0:
			return errors.New("give the IDs to retry (see deadletters list) or --all")
		}
	}
	cfg, logger, err := c.load(stderr)
	if err != nil {
		return err
	}
	var dl deadLetterStore
	if a := runningWorker(ctx, cfg); a != nil {
		dl = a
	} else {
		st, err := worker.OpenExistingStore(ctx, cfg, logger)
		if errors.Is(err, worker.ErrNoStore) && sub == "list" {
			_, err = fmt.Fprintf(stdout, "0 dead letters (%v)\n", err)
			return err
		}
		if err != nil {
			return err
		}
		defer st.Close()
		// The publisher reads each item's type and title from the store;
		// listing and retrying never call the API, so it gets none.
		pub, err := publish.New(publish.Options{Store: st, API: publish.NewACS(nil), Logger: logger})
		if err != nil {
			return err
		}
		dl = pub
	}

	if sub == "list" {
		dls, err := dl.DeadLetters(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTYPE\tSTATUS\tATTEMPTS\tWHEN\tTITLE\tREASON")
		for _, d := range dls {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", d.ID, d.Type, d.Status, d.Attempts,
				d.At.UTC().Format("2006-01-02 15:04:05"), truncate(d.Title, 40), truncate(d.Reason, 80))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(stdout, plural(len(dls), "dead letter", "dead letters"))
		return nil
	}
	n := 0
	if *all {
		if n, err = dl.RetryDeadLetters(ctx); err != nil {
			return err
		}
	} else {
		for _, id := range ids {
			if err := dl.RetryDeadLetter(ctx, id); err != nil {
				if errors.Is(err, publish.ErrNotFound) {
					err = errors.New("no such dead letter (see deadletters list)")
				}
				if n > 0 {
					fmt.Fprintf(stdout, "%s queued again\n", plural(n, "dead letter", "dead letters"))
				}
				return fmt.Errorf("%s: %w", id, err)
			}
			n++
		}
	}
	fmt.Fprintf(stdout, "%s queued again\n", plural(n, "dead letter", "dead letters"))
	if _, ok := dl.(*adminDeadLetters); ok {
		fmt.Fprintln(stdout, "the running worker delivers them now")
	} else {
		fmt.Fprintln(stdout, "a running worker delivers them now; otherwise run feedworker once")
	}
	return nil
}

// deadLetterStore is what the command needs: the publisher over the store,
// or a running worker's admin endpoint.
type deadLetterStore interface {
	DeadLetters(ctx context.Context) ([]publish.DeadLetter, error)
	RetryDeadLetter(ctx context.Context, id string) error
	RetryDeadLetters(ctx context.Context) (int, error)
}

// runningWorker returns the admin endpoint of the worker that holds the
// embedded store the config names, or nil: with Redis, without an admin
// address, when nothing answers there, or when what answers is not a
// worker on this store.
func runningWorker(ctx context.Context, cfg *config.Config) *adminDeadLetters {
	if cfg.Redis.URL != "" || cfg.Admin.Listen == "" {
		return nil
	}
	a := &adminDeadLetters{
		base:  "http://" + cfg.Admin.Listen,
		store: worker.AbsStorePath(cfg.Store.Path),
		token: cfg.Admin.Token,
		hc:    &http.Client{Timeout: 30 * time.Second},
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := a.DeadLetters(pctx); err != nil {
		return nil
	}
	return a
}

// adminDeadLetters is a running worker's /deadletters endpoints (see
// worker/deadletters.go).
type adminDeadLetters struct {
	base  string
	store string
	// token is admin.token, sent as a bearer token with a retry.
	token string
	hc    *http.Client
}

func (a *adminDeadLetters) DeadLetters(ctx context.Context) ([]publish.DeadLetter, error) {
	var ans worker.DeadLettersAnswer
	if err := a.do(ctx, http.MethodGet, "/deadletters?store="+url.QueryEscape(a.store), nil, &ans); err != nil {
		return nil, err
	}
	return ans.DeadLetters, nil
}

func (a *adminDeadLetters) RetryDeadLetter(ctx context.Context, id string) error {
	var ans worker.RetryAnswer
	return a.do(ctx, http.MethodPost, "/deadletters/retry", worker.RetryRequest{Store: a.store, IDs: []string{id}}, &ans)
}

func (a *adminDeadLetters) RetryDeadLetters(ctx context.Context) (int, error) {
	var ans worker.RetryAnswer
	err := a.do(ctx, http.MethodPost, "/deadletters/retry", worker.RetryRequest{Store: a.store, All: true}, &ans)
	return ans.Queued, err
}

func (a *adminDeadLetters) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.token != "" && method == http.MethodPost {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return fmt.Errorf("the running worker at %s: %w", a.base, err)
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return fmt.Errorf("the running worker at %s: %s %s: %s, not a worker's answer", a.base, method, path, resp.Status)
	}
	var ans worker.RetryAnswer
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("the running worker at %s: %w", a.base, err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return publish.ErrNotFound
	}
	if resp.StatusCode != http.StatusOK {
		_ = json.Unmarshal(b, &ans)
		return fmt.Errorf("the running worker at %s: %s", a.base, ans.Error)
	}
	return json.Unmarshal(b, out)
}
