package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/feedworker/feedworker/publish"
)

// cmdRelease ends the flood guard's hold on a feed's items: --all posts
// them, --since posts those published since a date, --drop records them
// as seen for good.
func cmdRelease(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("release", stderr)
	c := commonFlags(fs)
	feedID := fs.String("feed", "", "the feed id (required)")
	all := fs.Bool("all", false, "post every held item")
	since := fs.String("since", "", "post the held items published on or after this date, YYYY-MM-DD or RFC 3339; record the rest as seen")
	drop := fs.Bool("drop", false, "post none: record every held item as seen")
	if err := fs.Parse(args); err != nil {
		return err
	}
	n := 0
	for _, set := range []bool{*all, *since != "", *drop} {
		if set {
			n++
		}
	}
	if *feedID == "" || n != 1 {
		return errors.New("--feed and exactly one of --all, --since DATE or --drop are required")
	}
	mode, t := publish.ReleaseAll, time.Time{}
	switch {
	case *drop:
		mode = publish.ReleaseDrop
	case *since != "":
		var err error
		if t, err = parseSince(*since); err != nil {
			return err
		}
		mode = publish.ReleaseSince
	}
	w, _, err := c.worker(ctx, stdout, stderr)
	if err != nil {
		return err
	}
	defer w.Close()
	queued, dropped, err := w.Release(ctx, *feedID, mode, t)
	if errors.Is(err, publish.ErrNothingHeld) {
		fmt.Fprintf(stdout, "feed %s: no items held\n", *feedID)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "feed %s: %s released for posting, %s recorded as seen\n", *feedID, plural(queued, "item", "items"), plural(dropped, "item", "items"))
	if queued == 0 {
		return nil
	}
	if err := w.Publisher().Drain(ctx); err != nil {
		return err
	}
	fmt.Fprintln(stdout, w.Summary(ctx))
	return nil
}
