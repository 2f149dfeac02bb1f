package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/history"
	"github.com/feedworker/feedworker/worker"
)

// cmdExplain prints what the history remembers of a feed or of the items
// matching a text: the console's answer to "why didn't my item appear?",
// from the store (a running worker's Redis, or the embedded file of a
// stopped one).
func cmdExplain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("explain", stderr)
	c := commonFlags(fs)
	feedID := fs.String("feed", "", "a feed id: its recent polls and items")
	item := fs.String("item", "", "part of an item's title, link, GUID or external id: its story, in every feed")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (*feedID == "") == (*item == "") {
		return errors.New("give --feed ID or --item TEXT (one of them)")
	}
	cfg, logger, err := c.load(stderr)
	if err != nil {
		return err
	}
	var ids []string
	for _, f := range cfg.Feeds {
		ids = append(ids, f.ID)
	}
	if *feedID != "" && !slices.Contains(ids, *feedID) {
		return fmt.Errorf("no feed %q in %s", *feedID, cfg.File)
	}
	st, err := worker.OpenExistingStore(ctx, cfg, logger)
	if errors.Is(err, worker.ErrNoStore) {
		return explainNothing(stdout, *feedID, *asJSON, err)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	hs, err := worker.OpenHistory(st, cfg.Redis.Prefix, history.Limits{Items: cfg.Admin.History})
	if err != nil {
		return err
	}
	now := time.Now()
	content := contentPattern(cfg)
	if *feedID != "" {
		f, err := hs.Feed(ctx, *feedID)
		if err != nil {
			return err
		}
		if *asJSON {
			// Lists, never null: a feed not polled yet has none.
			return writeJSON(stdout, map[string]any{"feed": *feedID, "polls": orEmpty(f.Polls), "items": orEmpty(f.Items)})
		}
		printFeed(stdout, *feedID, f, now)
		return nil
	}
	found, err := hs.Find(ctx, ids, *item, 50)
	if err != nil {
		return err
	}
	if *asJSON {
		out := make([]map[string]any, 0, len(found))
		for _, f := range found {
			out = append(out, map[string]any{"feed": f.Feed, "item": f.Item})
		}
		return writeJSON(stdout, out)
	}
	if len(found) == 0 {
		fmt.Fprintf(stdout, "no remembered item matches %q.\nThe history keeps the last %d items of each feed (admin.history); "+
			"if the feed carries the item, run feedworker explain --feed ID to see its last polls.\n", *item, cfg.Admin.History)
		return nil
	}
	for i, f := range found {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		printItem(stdout, f.Feed, f.Item, content, now)
	}
	return nil
}

// explainNothing answers for a store not created yet: nothing was
// recorded, in the form asked for.
func explainNothing(stdout io.Writer, feedID string, asJSON bool, why error) error {
	switch {
	case asJSON && feedID != "":
		return writeJSON(stdout, map[string]any{"feed": feedID, "polls": []history.Poll{}, "items": []history.Item{}})
	case asJSON:
		return writeJSON(stdout, []any{})
	}
	_, err := fmt.Fprintf(stdout, "nothing recorded yet: %v.\n", why)
	return err
}

// orEmpty is s, or an empty slice for nil (JSON [] rather than null).
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// contentPattern is where the API shows a content item ("" for the
// embedded sandbox, which lives only inside a running worker).
func contentPattern(cfg *config.Config) string {
	if cfg.API.BaseURL == config.EmbeddedAPI {
		return ""
	}
	return strings.TrimSuffix(config.RedactURL(cfg.API.BaseURL), "/") + "/v3/content/"
}

func stamp(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format("2006-01-02 15:04:05 UTC"), history.Since(now.Sub(t)))
}

func printItem(w io.Writer, feed string, it history.Item, content string, now time.Time) {
	fmt.Fprintf(w, "feed %s · item %s\n", feed, it.ID)
	if it.Title != "" {
		fmt.Fprintf(w, "  title       %s\n", it.Title)
	}
	if it.Link != "" {
		fmt.Fprintf(w, "  link        %s\n", it.Link)
	}
	if it.GUID != "" {
		fmt.Fprintf(w, "  guid        %s\n", it.GUID)
	}
	fmt.Fprintf(w, "  first seen  %s\n", stamp(it.FirstSeenTime(), now))
	if it.LastSeen != 0 {
		fmt.Fprintf(w, "  last seen   %s\n", stamp(it.LastSeenTime(), now))
	}
	if id := it.ContentID(); id != 0 {
		if content != "" {
			fmt.Fprintf(w, "  at the API  content %d: %s%d\n", id, content, id)
		} else {
			fmt.Fprintf(w, "  at the API  content %d\n", id)
		}
	}
	fmt.Fprintln(w, "  what happened, oldest first:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range it.Events {
		fmt.Fprintf(tw, "    %s\t%s\t%s\n", e.Time().UTC().Format("2006-01-02 15:04:05"), e.Kind, history.Describe(e, now))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "  now: %s\n", history.Describe(it.Last(), now))
}

func printFeed(w io.Writer, feed string, f history.Feed, now time.Time) {
	fmt.Fprintf(w, "feed %s: %d polls and %d items remembered\n\nrecent polls, newest first:\n", feed, len(f.Polls), len(f.Items))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  WHEN\tRESULT\tHTTP\tMS\tBYTES\tNEW\tCHANGED\tUNCHANGED\tFILTERED\tFAILED\tERROR")
	for _, p := range f.Polls[:min(len(f.Polls), 20)] {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", p.Time().UTC().Format("2006-01-02 15:04:05"), p.Result,
			p.StatusCode, p.DurationMS, p.Bytes, p.New, p.Changed, p.Unchanged, p.Filtered, p.Failed, truncate(p.Error, 80))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\nitems, most recent first:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  FATE\tWHEN\tTITLE\tEXTERNAL ID\tDETAIL")
	for _, it := range f.Items {
		last := it.Last()
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", last.Kind, last.Time().UTC().Format("2006-01-02 15:04:05"),
			truncate(it.Title, 50), it.ID, truncate(history.Describe(last, now), 100))
	}
	_ = tw.Flush()
}
