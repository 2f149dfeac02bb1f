package worker

import (
	"runtime/debug"
	"time"

	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/feeds"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/transform"
)

// ogConcurrency bounds the article pages fetched at once for og:image.
const ogConcurrency = 4

// Validators implements feeds.Handler: the stored conditional-GET state.
func (w *Worker) Validators(ctx context.Context, feedID string) (feeds.Validators, error) {
	v, err := w.pub.Validators(ctx, feedID)
	if err != nil {
		return feeds.Validators{}, err
	}
	return feeds.Validators{ETag: v.ETag, LastModified: v.LastModified}, nil
}

// ValidatorsAll implements feeds.BatchHandler: a pass over every feed
// loads their validators in one store round trip.
func (w *Worker) ValidatorsAll(ctx context.Context, feedIDs []string) (map[string]feeds.Validators, error) {
	vs, err := w.pub.ValidatorsAll(ctx, feedIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]feeds.Validators, len(vs))
	for id, v := range vs {
		out[id] = feeds.Validators{ETag: v.ETag, LastModified: v.LastModified}
	}
	return out, nil
}

// Handle implements feeds.Handler: it maps every item of a fetched
// document and hands the payloads, with the new validators, to the
// publisher's durable outbox. Only when that succeeded may the poller use
// the new validators, so a failure here never skips an item.
func (w *Worker) Handle(ctx context.Context, feed config.Feed, res *feeds.Result) (err error) {
	// A feed no test foresaw must cost that feed one poll, not the process:
	// the poller counts the error and keeps the old validators.
	defer func() {
		if r := recover(); r != nil {
			stack := debug.Stack()
			if s, ok := r.(interface{ Stack() []byte }); ok {
				stack = s.Stack() // raised again from a mapping span
			}
			w.log.Error("handling the feed panicked; its items were not taken", "feed", feed.ID,
				"panic", fmt.Sprint(r), "stack", string(stack))
			err = fmt.Errorf("feed %s: handling panicked: %v", feed.ID, r)
		}
	}()
	payloads, icalOpts, err := w.mapFeed(ctx, feed, res)
	if err != nil {
		return err
	}
	// The payloads hold what the items said: their parse tree (the
	// quickstart's 100,000 items, a third of the heap) need not live on
	// through the commit and its GCs.
	res.ReleaseItems()
	// Mapping a huge feed takes a while: a stop meanwhile records nothing
	// (the validators stay, so the next process fetches it again).
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("feed %s: stopped before its items were recorded: %w", feed.ID, err)
	}
	v := dedupe.Validators{ETag: res.Validators.ETag, LastModified: res.Validators.LastModified}
	if w.leases != nil {
		// The check before the commit: the lease this poll ran under must
		// still be provably ours, and its fencing token goes with the
		// commit, which the store refuses if the lease passed on meanwhile.
		if v.Fence, err = w.leases.Fence(ctx, feed.ID); err != nil {
			return fmt.Errorf("%w: %w", feeds.ErrNotOwned, err)
		}
	}
	opts := w.feedOptions(feed)
	opts.ICal = icalOpts
	counts, err := w.pub.Accept(ctx, feed.ID, payloads, v, opts)
	if errors.Is(err, dedupe.ErrFenced) {
		return fmt.Errorf("feed %s: %w: %w", feed.ID, feeds.ErrNotOwned, err)
	}
	if err != nil {
		return fmt.Errorf("feed %s: hand items to the outbox: %w", feed.ID, err)
	}
	w.afterPoll(ctx, feed, res)
	w.logPoll(feed, len(payloads), counts)
	return nil
}

// mapFeed maps a fetched document, counts what was filtered or failed, and
// fills og:images where the mapping asks for them. For an iCalendar
// document it also returns the publisher's calendar options.
func (w *Worker) mapFeed(ctx context.Context, feed config.Feed, res *feeds.Result) ([]transform.Payload, *publish.ICalOptions, error) {
	m := w.mapping(feed.ID)
	if m == nil {
		return nil, nil, fmt.Errorf("feed %s: no mapping (config reloaded during the poll?)", feed.ID)
	}
	if err := checkFormat(feed, res); err != nil {
		return nil, nil, err
	}
	// Mapping is CPU work only: more documents mapped at once than there
	// are CPUs finish no sooner, and each holds its half-built items (the
	// polls of a pass start together: 32 documents mapped at once were a
	// quarter of the live heap at 5,000 feeds). The others wait holding
	// only their parsed document.
	select {
	case w.mapSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("feed %s: stopped before mapping: %w", feed.ID, ctx.Err())
	}
	results, icalOpts := func() ([]transform.Result, *publish.ICalOptions) {
		// Given back however the mapping ends: a panic is Handle's to
		// recover, and a slot it kept would stop every later poll.
		defer func() { <-w.mapSlots }()
		now := w.now()
		if res.Calendar != nil {
			r := m.MapCalendar(res.Calendar, now)
			return r, calendarOptions(feed, m, r, now, res.Pushed || res.Partial != "")
		}
		return m.Map(res.Feed, now), nil
	}()
	// Full text first: the article's picture may spare an og:image lookup.
	FillFullText(ctx, w.article, w.log, feed.ID, m.FullTextSelector(), results)
	var needOG []int
	for i, r := range results {
		if r.NeedsOGImage {
			needOG = append(needOG, i)
		}
	}
	// Before counting: resolving an og:image can turn an item into a skip.
	w.fetchOGImages(ctx, feed.ID, results, needOG)
	w.hist.mapped(feed.ID, res.Feed, results)
	var filtered, failed int
	for _, r := range results {
		// The poller logs a feed warning when it appears and when it
		// clears, not at every poll.
		if r.Warning != "" && len(res.Warnings) == 0 {
			res.Warnings = append(res.Warnings, feeds.Warning{Code: feeds.WarnMapping, Message: r.Warning})
		}
		switch {
		case r.Err != nil:
			failed++
			w.log.Warn("item not mapped", "feed", feed.ID, "err", r.Err)
		case r.Skip != "":
			filtered++
			w.log.Debug("item skipped", "feed", feed.ID, "reason", r.Skip)
		}
	}
	w.pub.CountItems(feed.ID, "filtered", filtered)
	w.pub.CountItems(feed.ID, "failed", failed)
	payloads := make([]transform.Payload, 0, len(results))
	for _, r := range results {
		if r.Payload != nil && r.Err == nil && r.Skip == "" {
			payloads = append(payloads, *r.Payload)
		}
	}
	return payloads, icalOpts, nil
}

// fetchOGImages looks up the article pages of items without an image, a few
// at a time. A failed lookup leaves the item without an image.
func (w *Worker) fetchOGImages(ctx context.Context, feedID string, results []transform.Result, idx []int) {
	if len(idx) == 0 {
		return
	}
	sem := make(chan struct{}, ogConcurrency)
	var wg sync.WaitGroup
	for _, i := range idx {
		r := &results[i]
		if r.Payload == nil || r.Payload.ExternalURL == "" {
			r.ResolveOGImage("")
			continue
		}
		if r.Payload.ImageURL != "" { // the full-text article had one
			r.ResolveOGImage(r.Payload.ImageURL)
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			img, err := w.og.Fetch(ctx, r.Payload.ExternalURL)
			if err != nil {
				page := r.Payload.ExternalURL
				w.log.Debug("og:image lookup failed", "feed", feedID, "page", config.RedactURL(page), "err", redactErr(err, page))
				img = ""
			}
			// Resolving with "" still matters: it applies require_image.
			r.ResolveOGImage(img)
		}()
	}
	wg.Wait()
}

// feedOptions are the publisher's per-feed settings from the config.
func (w *Worker) feedOptions(feed config.Feed) publish.FeedOptions {
	o := publish.FeedOptions{InitialItems: 10}
	if feed.InitialItems != nil {
		o.InitialItems = *feed.InitialItems
	}
	if feed.RecreateDeleted != nil {
		o.RecreateDeleted = *feed.RecreateDeleted
	}
	if feed.CreateCategories != nil {
		o.CreateCategories = *feed.CreateCategories
	}
	if m := w.mapping(feed.ID); m != nil {
		o.Dates = m.DateRules()
	}
	o.Reposts = repostOptions(feed)
	return o
}

func (w *Worker) mapping(feedID string) *transform.Mapping {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.mappings[feedID]
}

// Backfill fetches a feed now and queues its items that were recorded as
// seen only and were published at or after since. Validators are not used
// or changed: the fetch is unconditional so every item is there.
func (w *Worker) Backfill(ctx context.Context, feedID string, since time.Time) (publish.Counts, error) {
	var feed *config.Feed
	for _, f := range w.config().Feeds {
		if f.ID == feedID {
			feed = &f
			break
		}
	}
	if feed == nil {
		return publish.Counts{}, fmt.Errorf("no feed %q in the config", feedID)
	}
	fetcher, err := feeds.NewFetcher(w.config().HTTP)
	if err != nil {
		return publish.Counts{}, err
	}
	res, err := fetcher.Fetch(ctx, feed.URL, feeds.Validators{})
	if err != nil {
		return publish.Counts{}, err
	}
	payloads, icalOpts, err := w.mapFeed(ctx, *feed, res)
	if err != nil {
		return publish.Counts{}, err
	}
	opts := w.feedOptions(*feed)
	opts.ICal = icalOpts
	return w.pub.Backfill(ctx, feedID, payloads, since, opts)
}
