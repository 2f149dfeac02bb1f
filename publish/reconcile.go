package publish

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/internal/feedseries"
	"github.com/feedworker/feedworker/transform"
)

// DefaultEpochInterval is how often [Publisher.WatchStore] reads the
// store's epoch marker.
const DefaultEpochInterval = 2 * time.Second

// reconciler is the publisher's memory of the store's epoch and of which
// feeds were reconciled since the store was last found new or changed.
type reconciler struct {
	store dedupe.Reconciler // nil: the store has no marker; never reconcile
	log   *slog.Logger
	m     *reconcileMetrics
	// onLoss runs when the store is found changed under a running worker
	// (not at the first read: a store new then has nothing cached about
	// it to drop).
	onLoss func()

	mu sync.Mutex
	// epoch is the marker as last read; "" before the first read.
	epoch string
	// gen counts the times the store was found new or changed: a feed is
	// in reconcile mode while done[feed] < gen.
	gen  uint64
	done map[string]uint64
	// strictGen is gen as of the last loss noticed under a running worker:
	// a feed not reconciled since (done[feed] < strictGen) never posts an
	// item that cannot be verified. A marker missing at start may just
	// be a new deployment, whose first sight must not depend on a
	// searchable service; there look-ups are made, but on a service that
	// cannot be searched first sight goes on as before (with a warning).
	strictGen uint64
	// lostAt is when a change of the marker was noticed under a running
	// worker: sends may have been in flight when the store lost its data,
	// so look-ups wait until they have surely ended (see lookupsFrom).
	lostAt time.Time
}

type reconcileMetrics struct {
	items   *feedseries.Vec // by feed: compact series (docs/PERFORMANCE.md)
	lookups *prometheus.CounterVec
	passes  prometheus.Counter
	losses  prometheus.Counter
}

func newReconcileMetrics(reg prometheus.Registerer) (*reconcileMetrics, error) {
	m := &reconcileMetrics{
		items: feedseries.NewCounter("feedworker_reconcile_items_total",
			"Items looked up on the API before their first POST (reconcile mode), by outcome: found (recorded as published), new (not found, queued), seen (not found, older than what the API has: recorded without publishing).",
			"feed", "outcome"),
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedworker_reconcile_lookups_total",
			Help: "GET /v3/content requests made by reconcile look-ups, by kind: filter (external_id in up to 100 ids), scan (a page read without a filter, when the service refuses or ignores it).",
		}, []string{"kind"}),
		passes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedworker_reconcile_passes_total",
			Help: "Feed fetches whose unknown items were looked up on the API (each costs one GET per 100 such items, or a scan).",
		}),
		losses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedworker_reconcile_store_losses_total",
			Help: "Times the store was found without its epoch marker, or with another one: a new store, or one that lost its data.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.items, m.lookups, m.passes, m.losses} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}

// checkEpoch reads the marker (writing one if there is none) and compares
// it with the last read: lost reports a new or changed store.
func (p *Publisher) checkEpoch(ctx context.Context) (lost bool, err error) {
	r := p.rec
	if r.store == nil {
		return false, nil
	}
	var id string
	var created bool
	err = p.storeOp(ctx, "epoch", func(ctx context.Context) (err error) {
		id, created, err = r.store.Epoch(ctx)
		return err
	})
	if err != nil {
		return false, err
	}
	r.mu.Lock()
	running := r.epoch != ""
	switch {
	case r.epoch == "" && !created:
		r.epoch = id
	case r.epoch == "":
		// At start: a new store, or one emptied while no worker ran.
		r.epoch, r.gen, lost = id, r.gen+1, true
		var created string
		if c, ok := r.store.(dedupe.FileCreator); ok {
			created = c.CreatedFile()
		}
		if created != "" {
			// An embedded file made by this start (every first start):
			// no warning, which a newcomer would meet on the first run.
			// The path says which file, should it be one that a
			// container without a volume makes at every start.
			r.log.Info("the store's file was created by this start (a first start, or the file was removed); every feed is reconciled with the API before anything of it is posted",
				"path", created)
		} else {
			r.log.Warn("the store has no epoch marker: it is new or lost its data; every feed is reconciled with the API before anything of it is posted")
		}
	case id != r.epoch:
		r.epoch, r.gen, lost = id, r.gen+1, true
		r.strictGen, r.lostAt = r.gen, time.Now()
		r.log.Error("the store lost its data while running (its epoch marker changed); every feed is reconciled with the API before anything of it is posted",
			"lookups_wait", p.o.SendTimeout)
	}
	r.mu.Unlock()
	if lost {
		r.m.losses.Inc()
		if running && r.onLoss != nil {
			r.onLoss()
		}
	}
	return lost, nil
}

// WatchStore reads the store's epoch marker every EpochInterval until ctx
// is done, so that a store that loses its data under a running worker (a
// FLUSHALL, a restart without persistence, a failover to an empty replica)
// is noticed within that time even for feeds that answer 304: every feed
// then enters reconcile mode and Options.OnStoreLoss runs (the worker has
// the poller fetch every feed in full again). A store without a marker
// ([dedupe.Reconciler]) is not watched.
func (p *Publisher) WatchStore(ctx context.Context) {
	if p.rec.store == nil {
		return
	}
	t := time.NewTicker(p.o.EpochInterval)
	defer t.Stop()
	for {
		if _, err := p.checkEpoch(ctx); err != nil && ctx.Err() == nil {
			// The store is down: Accept and claims report it.
			p.log.Debug("epoch marker not read", "cause", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reconcileMode says whether Accept must look a feed's unknown items up
// on the API before posting any, and how. A feed the store has never seen
// (known false) is always looked up: the store cannot tell a feed new to
// the API from one whose records it lost (a wiped cluster node, an epoch
// read that raced a FLUSHALL), and the cost is one GET per 100 items, once.
// strict is set while the store is known to have lost data under a
// running worker since the feed's last full pass: then an item that cannot
// be verified is never posted (the feed's polls fail until it can be);
// otherwise a service that cannot be searched leaves first sight as it
// always was.
func (p *Publisher) reconcileMode(ctx context.Context, feedID string, known bool) (on, strict bool, gen uint64, err error) {
	r := p.rec
	if r.store == nil {
		return false, false, 0, nil
	}
	r.mu.Lock()
	read := r.epoch != ""
	r.mu.Unlock()
	if !read || !known {
		// Before the first read of the marker, and whenever a feed looks
		// new: a store emptied a moment ago is noticed now, not at the
		// watcher's next tick.
		if _, err := p.checkEpoch(ctx); err != nil {
			return false, false, 0, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	on = !known || r.done[feedID] < r.gen
	return on, r.done[feedID] < r.strictGen, r.gen, nil
}

// reconciled ends a feed's reconcile mode: one full pass was accepted.
func (p *Publisher) reconciled(feedID string, gen uint64) {
	r := p.rec
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done[feedID] < gen {
		r.done[feedID] = gen
	}
}

// waitForSendsInFlight holds look-ups after a loss noticed under a running
// worker until SendTimeout has passed since: a POST in flight when the
// store lost its data (here or in another replica) has landed or failed by
// then, so a look-up cannot miss it and post the item a second time.
func (p *Publisher) waitForSendsInFlight(ctx context.Context) error {
	p.rec.mu.Lock()
	lostAt := p.rec.lostAt
	p.rec.mu.Unlock()
	d := time.Until(lostAt.Add(p.o.SendTimeout))
	if lostAt.IsZero() || d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// reconcile looks the items of one fetch that have no record up on the
// API, records those found as published, and decides for the rest, by
// changing act: found items are not sent (act 0), unless their title on
// the service differs from the feed's (then an update); on a feed the store
// did not know, items not found are published when they rank among the
// newest InitialItems or above the oldest item the API has (they are new,
// or were queued when the store lost them), and recorded as seen only
// below it (the items first sight left unpublished). It returns which
// items were found.
func (p *Publisher) reconcile(ctx context.Context, feedID string, kept []*transform.Payload, d dedupe.Diff, act []dedupe.Action, o FeedOptions, strict bool) ([]bool, error) {
	found := make([]bool, len(kept))
	var ids []string
	for i, s := range d.Status {
		if s == dedupe.StatusNew {
			ids = append(ids, kept[i].ExternalID)
		}
	}
	if len(ids) == 0 {
		return found, nil
	}
	if strict {
		if err := p.waitForSendsInFlight(ctx); err != nil {
			return nil, err
		}
	}
	bf, _ := p.api.(BatchFinder) // gated always is one
	p.rec.m.passes.Inc()
	got, n, err := bf.FindMany(ctx, ids)
	p.rec.m.lookups.WithLabelValues("filter").Add(float64(n.Filtered))
	p.rec.m.lookups.WithLabelValues("scan").Add(float64(n.Scanned))
	if err != nil {
		if !strict && (errors.Is(err, ErrUnverifiable) || errors.Is(err, acs.ErrUnreadable)) {
			// As before look-ups at first sight existed: such a service
			// could never take a new feed otherwise.
			p.log.Warn("feed new to the store could not be looked up on the API; first sight as usual",
				"feed", feedID, "cause", err)
			return found, nil
		}
		return nil, fmt.Errorf("reconcile feed %s with the API (%d items): %w", feedID, len(ids), err)
	}
	var rec []dedupe.Found
	edited := 0
	oldest := -1 // rank of the oldest item the API has
	for rank, i := range newestFirst(kept) {
		s := d.Status[i]
		f, ok := got[kept[i].ExternalID]
		switch {
		case s == dedupe.StatusNew && ok:
			found[i], act[i] = true, 0
			hash := kept[i].Hash
			if f.Title != "" && f.Title != kept[i].Title {
				// Edited at the source since it was posted: recorded with
				// no known version, the item is queued as an update of
				// the content found. (Edits that keep the title cannot be
				// told from here; they go out with the item's next edit.)
				hash, act[i] = "", dedupe.ActionPublish
				edited++
			}
			rec = append(rec, dedupe.Found{ExternalID: kept[i].ExternalID, Hash: hash, ContentID: f.ID, Type: cmp.Or(f.Type, kept[i].Type)})
			oldest = rank
		case s == dedupe.StatusUnchanged || s == dedupe.StatusChanged:
			oldest = rank // published, or queued to be
		}
	}
	if len(rec) > 0 {
		err := p.storeOp(ctx, "record_found", func(ctx context.Context) error {
			_, err := p.rec.store.RecordFound(ctx, feedID, rec, time.Now())
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("reconcile feed %s: record %d items found on the API: %w", feedID, len(rec), err)
		}
	}
	newN, seenN := 0, 0
	cutoff := max(o.InitialItems, oldest+1)
	for rank, i := range newestFirst(kept) {
		if d.Status[i] != dedupe.StatusNew || found[i] {
			continue
		}
		if !d.Known && o.ICal == nil {
			// (Calendar occurrences have no first sight: their own rules
			// already decided.)
			act[i] = dedupe.ActionSeeOnly
			if rank < cutoff {
				act[i] = dedupe.ActionPublish
			}
		}
		if act[i] == dedupe.ActionSeeOnly {
			seenN++
		} else {
			newN++
		}
	}
	for outcome, c := range map[string]int{"found": len(rec), "new": newN, "seen": seenN} {
		if c > 0 {
			p.rec.m.items.WithLabelValues(feedID, outcome).Add(float64(c))
		}
	}
	p.log.Info("feed reconciled with the API", "feed", feedID, "looked_up", len(ids), "found", len(rec),
		"found_edited", edited, "to_post", newN, "seen_only", seenN, "requests", n.Filtered+n.Scanned)
	return found, nil
}
