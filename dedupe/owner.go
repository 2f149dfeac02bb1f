package dedupe

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Owner shares feeds among workers through the store's leases, so that
// each feed is polled by one worker at a time. It implements the poller's
// Owner hook. While Run is running, held leases are renewed every third of
// the TTL, so polling a feed this worker already holds costs no round trip,
// and a worker that dies loses its leases after the TTL.
type Owner struct {
	s   Store
	id  string
	ttl time.Duration
	log *slog.Logger

	mu sync.Mutex
	// held maps a feed to the time until which its lease surely runs: the
	// TTL counted from before the request that took or renewed it.
	held map[string]time.Time
}

// NewOwner returns an Owner named id (unique per worker process) holding
// leases for ttl. A nil logger discards.
func NewOwner(s Store, id string, ttl time.Duration, log *slog.Logger) *Owner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Owner{s: s, id: id, ttl: ttl, log: log, held: map[string]time.Time{}}
}

func leaseName(feedID string) string { return "feed:" + feedID }

// Own reports whether this worker holds feedID's lease now, taking it if it
// is free. A lease known to run for more than half its TTL is trusted
// without asking the store.
func (o *Owner) Own(ctx context.Context, feedID string) (bool, error) {
	o.mu.Lock()
	until, ok := o.held[feedID]
	o.mu.Unlock()
	if ok && time.Until(until) > o.ttl/2 {
		return true, nil
	}
	start := time.Now()
	got, err := o.s.AcquireLease(ctx, leaseName(feedID), o.id, o.ttl)
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil || !got {
		delete(o.held, feedID)
		return false, err
	}
	o.held[feedID] = start.Add(o.ttl)
	return true, nil
}

// OwnAll is Own for many feeds: it reports, per feed, whether this worker
// holds its lease now, taking the free ones. With a store that batches
// leases ([LeaseBatcher]) it costs one round trip whatever the number of
// feeds, so a pass over every feed (feedworker once) does not pay one per
// feed; Own then trusts what OwnAll took like any held lease.
func (o *Owner) OwnAll(ctx context.Context, feedIDs []string) (map[string]bool, error) {
	out := make(map[string]bool, len(feedIDs))
	var ask []string
	o.mu.Lock()
	for _, id := range feedIDs {
		if until, ok := o.held[id]; ok && time.Until(until) > o.ttl/2 {
			out[id] = true
		} else {
			ask = append(ask, id)
		}
	}
	o.mu.Unlock()
	if len(ask) == 0 {
		return out, nil
	}
	lb, ok := o.s.(LeaseBatcher)
	if !ok {
		for _, id := range ask {
			own, err := o.Own(ctx, id)
			if err != nil {
				return nil, err
			}
			out[id] = own
		}
		return out, nil
	}
	names := make([]string, len(ask))
	for i, id := range ask {
		names[i] = leaseName(id)
	}
	start := time.Now()
	got, err := lb.AcquireLeases(ctx, names, o.id, o.ttl)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, id := range ask {
		out[id] = got[i]
		if got[i] {
			o.held[id] = start.Add(o.ttl)
		} else {
			delete(o.held, id)
		}
	}
	return out, nil
}

// Release gives feedID's lease up, if this worker holds it (the feed left
// the configuration).
func (o *Owner) Release(ctx context.Context, feedID string) error {
	o.mu.Lock()
	delete(o.held, feedID)
	o.mu.Unlock()
	return o.s.ReleaseLease(ctx, leaseName(feedID), o.id)
}

// Run renews the held leases until ctx is done, then releases them all so
// that another worker can take the feeds over at once.
func (o *Owner) Run(ctx context.Context) {
	t := time.NewTicker(o.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			o.ReleaseAll(ctx)
			return
		case <-t.C:
			o.renew(ctx)
		}
	}
}

// ReleaseAll gives up every lease this worker holds, so that another
// worker (or the next `feedworker once`) can take the feeds at once rather
// than after the TTL. It runs even when ctx is done, for at most 5s.
func (o *Owner) ReleaseAll(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	ids := o.heldIDs()
	if lb, ok := o.s.(LeaseBatcher); ok && len(ids) > 0 {
		o.mu.Lock()
		for _, id := range ids {
			delete(o.held, id)
		}
		o.mu.Unlock()
		names := make([]string, len(ids))
		for i, id := range ids {
			names[i] = leaseName(id)
		}
		if err := lb.ReleaseLeases(rctx, names, o.id); err != nil {
			// They expire after the TTL anyway.
			o.log.Warn("lease release failed", "feeds", len(ids), "err", err)
		}
		return
	}
	for _, id := range ids {
		if err := o.Release(rctx, id); err != nil {
			o.log.Warn("lease release failed", "feed", id, "err", err)
		}
	}
}

func (o *Owner) heldIDs() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	ids := make([]string, 0, len(o.held))
	for id := range o.held {
		ids = append(ids, id)
	}
	return ids
}

func (o *Owner) renew(ctx context.Context) {
	ids := o.heldIDs()
	if lb, ok := o.s.(LeaseBatcher); ok {
		// One round trip for every held lease, rather than one each: a
		// worker holding a thousand feeds would otherwise renew far more
		// often than it polls.
		o.renewBatch(ctx, lb, ids)
		return
	}
	for _, id := range ids {
		start := time.Now()
		ok, err := o.s.RenewLease(ctx, leaseName(id), o.id, o.ttl)
		o.mu.Lock()
		switch {
		case err != nil:
			// Keep the old deadline: Own stops trusting it at half the TTL
			// and asks the store again.
			o.log.Warn("lease renewal failed", "feed", id, "err", err)
		case !ok:
			delete(o.held, id)
			o.log.Info("lease lost to another worker", "feed", id)
		default:
			if _, still := o.held[id]; still {
				o.held[id] = start.Add(o.ttl)
			}
		}
		o.mu.Unlock()
	}
}

func (o *Owner) renewBatch(ctx context.Context, lb LeaseBatcher, ids []string) {
	if len(ids) == 0 {
		return
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = leaseName(id)
	}
	start := time.Now()
	ok, err := lb.RenewLeases(ctx, names, o.id, o.ttl)
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		// As for one lease: keep the old deadlines; Own stops trusting
		// them at half the TTL and asks the store again.
		o.log.Warn("lease renewal failed", "feeds", len(ids), "err", err)
		return
	}
	for i, id := range ids {
		switch {
		case !ok[i]:
			delete(o.held, id)
			o.log.Info("lease lost to another worker", "feed", id)
		default:
			if _, still := o.held[id]; still {
				o.held[id] = start.Add(o.ttl)
			}
		}
	}
}
