package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/feeds"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/transform"
)

// errFormat reports a document of another format than the feed's format
// setting names.
var errFormat = errors.New("wrong format")

// checkFormat holds a fetched document to the feed's format: auto takes
// what the fetcher detected, feed and ical only their own kind.
func checkFormat(feed config.Feed, res *feeds.Result) error {
	format := "auto"
	if feed.Format != nil {
		format = *feed.Format
	}
	switch {
	case format == "ical" && res.Calendar == nil:
		return fmt.Errorf("feed %s: %w: format is ical, but the URL served an RSS, Atom or JSON feed", feed.ID, errFormat)
	case format == "feed" && res.Calendar != nil:
		return fmt.Errorf("feed %s: %w: format is feed, but the URL served an iCalendar document", feed.ID, errFormat)
	}
	return nil
}

// calendarOptions are the publisher's settings for one poll of an
// iCalendar feed.
func calendarOptions(feed config.Feed, m *transform.Mapping, results []transform.Result, now time.Time, partial bool) *publish.ICalOptions {
	o := &publish.ICalOptions{Now: now, Incomplete: partial}
	if feed.ICal.InitialPast != nil {
		o.InitialPast = *feed.ICal.InitialPast
	}
	o.KeepMissing = feed.ICal.OnCancel != nil && *feed.ICal.OnCancel == "keep"
	_, o.Until = m.Window(now)
	for _, r := range results {
		if r.Err != nil {
			o.Incomplete = true
		}
		if r.SkippedID != "" {
			o.Present = append(o.Present, r.SkippedID)
		}
	}
	return o
}
