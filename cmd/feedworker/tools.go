package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/feeds"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/transform"
	"github.com/feedworker/feedworker/worker"
)

// cmdPreview fetches one feed (or all) and prints what would be published,
// without publishing or recording anything.
func cmdPreview(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("preview", stderr)
	cfgPath := fs.String("config", "", "the config file (or use --url)")
	feedID := fs.String("feed", "", "only this feed of the config")
	rawURL := fs.String("url", "", "preview this URL with the default mapping instead of a config")
	typ := fs.String("type", "story", "with --url: the content type (story, link, event, need)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var cfg *config.Config
	var err error
	switch {
	case *rawURL != "" && *cfgPath == "":
		doc := fmt.Sprintf("api: {base_url: embedded}\nfeeds:\n  - id: preview\n    url: %q\n    type: %q\n", *rawURL, *typ)
		cfg, err = worker.Loader(buildVersion()).Parse("--url", []byte(doc))
	case *cfgPath != "" && *rawURL == "":
		cfg, err = worker.LoadConfig(*cfgPath, buildVersion())
	default:
		return errors.New("give --config (optionally with --feed) or --url")
	}
	if err != nil {
		return err
	}
	fetcher, err := feeds.NewFetcher(cfg.HTTP)
	if err != nil {
		return err
	}
	articles, err := worker.NewArticleFetcher(cfg.HTTP, nil)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// Each item shows the request its first publish sends (the fields of its
	// type only), with the send-time date rules applied, and the category
	// names that become ids then.
	type item struct {
		ExternalID    string   `json:"external_id,omitempty"`
		Skip          string   `json:"skip,omitempty"`
		Error         string   `json:"error,omitempty"`
		Method        string   `json:"method,omitempty"`
		Path          string   `json:"path,omitempty"`
		Request       any      `json:"request,omitempty"`
		CategoryNames []string `json:"category_names,omitempty"`
		// Repost is set for an item the worker would take for a known
		// story (reposts): not posted.
		Repost *previewRepost `json:"repost,omitempty"`
	}
	type feedOut struct {
		Feed  string `json:"feed"`
		URL   string `json:"url"`
		Error string `json:"error,omitempty"`
		Items []item `json:"items"`
	}
	var out []feedOut
	found := false
	st := previewStore(ctx, cfg, *cfgPath != "", stderr)
	if st != nil {
		defer st.Close()
	}
	for _, f := range cfg.Feeds {
		if *feedID != "" && f.ID != *feedID {
			continue
		}
		found = true
		fo := feedOut{Feed: f.ID, URL: config.RedactURL(f.URL), Items: []item{}}
		m, err := transform.Compile(f.ID, f.Mapping)
		if err != nil {
			return err
		}
		res, err := fetcher.Fetch(ctx, f.URL, feeds.Validators{})
		if err != nil {
			fo.Error = err.Error()
			out = append(out, fo)
			continue
		}
		now := time.Now()
		results := m.Map(res.Feed, now)
		if res.Calendar != nil {
			results = m.MapCalendar(res.Calendar, now)
		}
		// The body shown is the one publishing sends: with full_text, the
		// article's extracted content.
		worker.FillFullText(ctx, articles, logger, f.ID, m.FullTextSelector(), results)
		rst := st
		if res.Calendar != nil {
			rst = nil // occurrences are never matched as reposts
		}
		reposts := previewReposts(ctx, rst, f, results, stderr)
		for ri, r := range results {
			it := item{Skip: r.Skip}
			if r.Err != nil {
				it.Error = r.Err.Error()
			}
			if p := r.Payload; p != nil && r.Skip == "" && r.Err == nil {
				send := p.ForSend(now, now, m.DateRules())
				path, body, err := publish.CreateRequest(send)
				if err != nil {
					return err
				}
				it.ExternalID, it.Method, it.Path, it.Request, it.CategoryNames = p.ExternalID, "POST", path, body, p.CategoryNames
				it.Repost = reposts[ri]
			}
			fo.Items = append(fo.Items, it)
		}
		out = append(out, fo)
	}
	if !found {
		return fmt.Errorf("no feed %q in the config", *feedID)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // bodies are HTML: show them as sent
	if err := enc.Encode(out); err != nil {
		return err
	}
	// As once does: a feed that could not be fetched is a failure of the
	// command, named on stderr, not only a field of the JSON.
	failed := 0
	for _, fo := range out {
		if fo.Error != "" {
			fmt.Fprintf(stderr, "%s: %s\n", fo.Feed, fo.Error)
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "feedworker preview: %d of %s failed\n", failed, plural(len(out), "feed", "feeds"))
		return exitError{code: 1}
	}
	return nil
}

// cmdContent lists content on the configured API. With the embedded sandbox
// it asks the running worker's admin endpoint, or reads a copy of the
// sandbox's state file, so it never writes to a running worker's state.
func cmdContent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "usage: feedworker content list --config F [--type T] [--external-id X] [--json]"
	fs := withUsage(newFlags("content list", stderr), usage)
	c := commonFlags(fs)
	typ := fs.String("type", "", "only this content type (story, link, event, need)")
	extID := fs.String("external-id", "", "only the item with this external_id")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	switch {
	case len(args) == 0:
		fs.Usage()
		return exitError{code: 2}
	case isHelp(args[0]):
		fs.Usage()
		return flag.ErrHelp
	case args[0] != "list":
		return fmt.Errorf("unknown subcommand %q; %s", args[0], usage)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	cfg, logger, err := c.load(stderr)
	if err != nil {
		return err
	}
	client, closeFn, err := contentClient(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer closeFn()

	opts := &acs.ListOptions{PageSize: 100}
	if *extID != "" {
		opts.Filter = acs.Filter{}.Eq("external_id", *extID)
	}
	var items []*acs.Content
	for it, err := range client.Content.All(ctx, opts) {
		if err != nil {
			return fmt.Errorf("list content: %w", err)
		}
		if *typ == "" || it.Type == *typ {
			items = append(items, it)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(items)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tPUBLISHED\tEXTERNAL ID\tTITLE")
	for _, it := range items {
		pub := ""
		if it.PublishDateUTC != nil {
			pub = it.PublishDateUTC.String()
		} else if it.EventStartDateTimeUTC != nil {
			pub = "starts " + it.EventStartDateTimeUTC.String()
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", it.ID, it.Type, pub, deref(it.ExternalID), truncate(deref(it.Title), 70))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, plural(len(items), "item", "items"))
	return nil
}

// contentClient returns a client for listing. For the embedded sandbox it
// prefers the running worker (admin /sandbox/), else a copy of the state file.
func contentClient(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*acs.Client, func(), error) {
	if cfg.API.BaseURL != config.EmbeddedAPI {
		api, err := worker.OpenAPI(ctx, cfg, worker.APIOptions{Logger: logger})
		if err != nil {
			return nil, nil, err
		}
		return api.Client, func() { _ = api.Close() }, nil
	}
	if cfg.Admin.Listen != "" {
		if conn, err := net.DialTimeout("tcp", cfg.Admin.Listen, 300*time.Millisecond); err == nil {
			conn.Close()
			base := "http://" + cfg.Admin.Listen + "/sandbox"
			hc := acs.ClientCredentials{TokenURL: acs.TokenURL(base), ClientID: "sandbox", ClientSecret: "sandbox-secret"}.HTTPClient(nil)
			client, err := acs.NewClient(base, hc)
			if err != nil {
				return nil, nil, err
			}
			return client, func() {}, nil
		}
	}
	data := ""
	tmp, err := os.MkdirTemp("", "feedworker-content-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	if src := cfg.API.SandboxData; src != "" {
		b, err := os.ReadFile(src)
		switch {
		case err == nil:
			data = filepath.Join(tmp, "sandbox.json")
			if err := os.WriteFile(data, b, 0o600); err != nil {
				cleanup()
				return nil, nil, err
			}
		case errors.Is(err, os.ErrNotExist):
			logger.Warn("the embedded sandbox has no state file yet: run the worker first", "file", src)
		default:
			cleanup()
			return nil, nil, err
		}
	}
	api, err := worker.OpenAPI(ctx, cfg, worker.APIOptions{Logger: logger, SandboxData: data})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return api.Client, func() { _ = api.Close(); cleanup() }, nil
}

// cmdBackfill publishes a feed's items that were recorded as seen only
// (beyond initial_items on first sight) and were published since a date.
func cmdBackfill(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("backfill", stderr)
	c := commonFlags(fs)
	feedID := fs.String("feed", "", "the feed id (required)")
	since := fs.String("since", "", "publish items published on or after this date, YYYY-MM-DD or RFC 3339 (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *feedID == "" || *since == "" {
		return errors.New("--feed and --since are required")
	}
	t, err := parseSince(*since)
	if err != nil {
		return err
	}
	w, _, err := c.worker(ctx, stdout, stderr)
	if err != nil {
		return err
	}
	defer w.Close()
	counts, err := w.Backfill(ctx, *feedID, t)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "feed %s: %s queued for backfill since %s\n", *feedID, plural(counts.New, "item", "items"), t.Format(time.DateOnly))
	if err := w.Publisher().Drain(ctx); err != nil {
		return err
	}
	fmt.Fprintln(stdout, w.Summary(ctx))
	return nil
}

func parseSince(s string) (time.Time, error) {
	for _, layout := range []string{time.DateOnly, time.RFC3339, "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want YYYY-MM-DD or RFC 3339", s)
}

// plural is "1 item" or "n items".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
