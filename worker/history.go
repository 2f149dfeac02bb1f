package worker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/feeds"
	"github.com/feedworker/feedworker/history"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/transform"
)

// outboxSampleEvery is how often the outbox depth is sampled for the chart.
const outboxSampleEvery = time.Minute

// OpenHistory returns the history kept beside the store st.
func OpenHistory(st *Store, prefix string, lim history.Limits) (history.Store, error) {
	if st.Redis != nil {
		if prefix == "" {
			prefix = dedupe.DefaultPrefix // as the store's own keys
		}
		return history.NewRedis(st.Redis, prefix, lim), nil
	}
	b, ok := st.Store.(*dedupe.Bolt)
	if !ok {
		return nil, fmt.Errorf("history: no history for a store of type %T", st.Store)
	}
	return history.NewBolt(b.DB(), lim), nil
}

// recorder turns what the poller and the publisher report into history
// records. Per feed it keeps what the mapping of the poll in progress found
// (the poller handles one poll of a feed at a time), so that the poll's
// record, written when it ends, carries the counts of its items.
type recorder struct {
	store history.Store
	rec   *history.Recorder
	now   func() time.Time

	mu   sync.Mutex
	poll map[string]*pollNotes
}

type pollNotes struct {
	guids                                     map[string]string // external id → GUID
	new, changed, unchanged, filtered, failed int
}

func newRecorder(store history.Store, rec *history.Recorder, now func() time.Time) *recorder {
	return &recorder{store: store, rec: rec, now: now, poll: map[string]*pollNotes{}}
}

func (r *recorder) notes(feedID string) *pollNotes {
	n, ok := r.poll[feedID]
	if !ok {
		n = &pollNotes{guids: map[string]string{}}
		r.poll[feedID] = n
	}
	return n
}

// mapped records the items a mapping filtered or failed, and remembers
// the GUIDs of the others for Accepted.
func (r *recorder) mapped(feedID string, doc *gofeed.Feed, results []transform.Result) {
	if r == nil || doc == nil {
		return
	}
	at := r.now().UnixMilli()
	var ups []history.Update
	r.mu.Lock()
	n := r.notes(feedID)
	for i, res := range results {
		if i >= len(doc.Items) || doc.Items[i] == nil {
			continue
		}
		it := doc.Items[i]
		switch {
		case res.Err != nil:
			n.failed++
			ups = append(ups, sourceUpdate(it, history.Event{Kind: history.MapFailed, At: at, Detail: res.Err.Error()}))
		case res.Skip != "":
			n.filtered++
			ups = append(ups, sourceUpdate(it, history.Event{Kind: history.Filtered, At: at, Detail: res.Skip}))
		case res.Payload != nil && it.GUID != "":
			n.guids[res.Payload.ExternalID] = it.GUID
		}
	}
	r.mu.Unlock()
	r.rec.Items(feedID, ups)
}

// sourceUpdate describes an item that got no external id, by what the
// feed says of it.
func sourceUpdate(it *gofeed.Item, e history.Event) history.Update {
	id := "title:" + it.Title
	switch {
	case it.GUID != "":
		id = "guid:" + it.GUID
	case it.Link != "":
		id = "link:" + it.Link
	}
	return history.Update{ID: id, Title: it.Title, Link: it.Link, GUID: it.GUID, Seen: true, Event: e}
}

// Accepted implements publish.Observer.
func (r *recorder) Accepted(feedID string, accepted time.Time, items []publish.Accepted) {
	at := accepted.UnixMilli()
	ups := make([]history.Update, 0, len(items))
	// The digests are computed before the lock: they are most of the work,
	// and every feed's Accept comes through here.
	digests := make([]history.Digest, len(items))
	for i, a := range items {
		if a.Fate != publish.FateDropped {
			digests[i] = digest(a.Payload)
		}
	}
	r.mu.Lock()
	n := r.notes(feedID)
	for i, a := range items {
		pl := a.Payload
		u := history.Update{ID: pl.ExternalID, Title: pl.Title, Link: pl.ExternalURL, GUID: n.guids[pl.ExternalID], Seen: true,
			Event: history.Event{At: at}}
		switch a.Fate {
		case publish.FateQueued:
			u.Event.Kind = history.Queued
			n.new++
		case publish.FateChanged:
			u.Event.Kind = history.Changed
			n.changed++
		case publish.FateSeenOnly:
			u.Event.Kind = history.SeenOnly
			n.unchanged++
		case publish.FateRepost:
			u.Event.Kind, u.Event.Detail = history.Repost, a.Reason
			n.unchanged++
		case publish.FateDropped:
			u.Event.Kind, u.Event.Detail = history.MapFailed, a.Reason
			n.failed++
			if u.ID == "" {
				u.ID = "title:" + pl.Title
			}
		default:
			u.Event.Kind = history.Unchanged
			n.unchanged++
		}
		u.Digest = digests[i]
		ups = append(ups, u)
	}
	r.mu.Unlock()
	r.rec.Items(feedID, ups)
}

// Delivered implements publish.Observer.
func (r *recorder) Delivered(d publish.Delivery) {
	e := history.Event{At: d.At.UnixMilli(), ContentID: d.ContentID}
	switch d.Outcome {
	case "created":
		e.Kind = history.Published
	case "updated":
		e.Kind = history.Updated
	case "recovered":
		e.Kind = history.Recovered
	case "removed":
		e.Kind, e.Detail = history.Removed, d.Reason
	case "reconciled":
		e.Kind = history.Reconciled
	case "aliased", "merged": // a repost of another feed's item, delivered as a merge (publish/merge.go)
		e.Kind, e.Detail = history.Repost, fmt.Sprintf("repost of content %d, another feed's item (not posted)", d.ContentID)
		if d.Outcome == "merged" {
			e.Detail = fmt.Sprintf("repost of content %d, another feed's item: its categories were added to it by a PUT", d.ContentID)
		}
	case "dead_letter":
		e.Kind, e.Status, e.Detail, e.Attempt = history.DeadLetter, d.Status, d.Reason, d.Attempt
	default:
		e.Kind, e.Status, e.Detail, e.Attempt = history.Retrying, d.Status, d.Reason, d.Attempt
		if !d.Next.IsZero() {
			e.Next = d.Next.UnixMilli()
		}
	}
	r.rec.Items(d.Key.FeedID, []history.Update{{ID: d.Key.ExternalID, Event: e}})
}

// Polled implements feeds.PollObserver.
func (r *recorder) Polled(feedID string, p feeds.PollRecord) {
	rec := history.Poll{
		At: p.Start.UnixMilli(), Result: p.Class, StatusCode: p.StatusCode, DurationMS: p.Duration.Milliseconds(),
		Bytes: p.Bytes, Items: p.Items, ETag: p.Sent.ETag, LastModified: p.Sent.LastModified,
	}
	if p.Err != nil {
		rec.Error = p.Err.Error()
	}
	r.mu.Lock()
	if n, ok := r.poll[feedID]; ok {
		rec.New, rec.Changed, rec.Unchanged, rec.Filtered, rec.Failed = n.new, n.changed, n.unchanged, n.filtered, n.failed
		delete(r.poll, feedID)
	}
	r.mu.Unlock()
	r.rec.Poll(feedID, rec)
}

// flushHistory writes what is recorded, for a pass that ends.
func (w *Worker) flushHistory(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	w.sampleOutbox(ctx)
	w.hist.rec.Flush(ctx)
}

// runHistory writes the history until ctx ends, sampling the outbox depth
// for the chart meanwhile.
func (w *Worker) runHistory(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.hist.rec.Run(ctx) })
	t := time.NewTicker(outboxSampleEvery)
	defer t.Stop()
	for {
		w.sampleOutbox(ctx)
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-t.C:
		}
	}
}

func (w *Worker) sampleOutbox(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if st, err := w.pub.Stats(ctx); err == nil {
		w.hist.rec.Outbox(st.Outbox)
	}
}

// addHistory fills the status's API state, hours and recent polls. The
// history is diagnostics: when it cannot be read the status goes without
// it (and says so in the log), rather than failing.
func (w *Worker) addHistory(ctx context.Context, st *Status, now time.Time) {
	st.API = w.api.state(now)
	if until := w.pub.GateUntil(); until.After(now) {
		st.API.GateUntil = &until
	}
	st.ReadOnly = w.config().Admin.Token == ""
	st.Hours = []history.Hour{}
	hours, err := w.hist.store.Hours(ctx, now.Add(-23*time.Hour), now)
	if err != nil {
		w.log.Warn("status: history unreadable", "err", err)
		return
	}
	st.Hours = hours
	ids := make([]string, len(st.Feeds))
	for i, f := range st.Feeds {
		ids[i] = f.ID
	}
	polls, err := w.hist.store.Polls(ctx, ids, stripPolls)
	if err != nil {
		w.log.Warn("status: history unreadable", "err", err)
		return
	}
	for i := range st.Feeds {
		ps := polls[st.Feeds[i].ID]
		slices.Reverse(ps)
		st.Feeds[i].RecentPolls = ps
	}
}
