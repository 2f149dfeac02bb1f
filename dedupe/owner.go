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
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			for _, id := range o.heldIDs() {
				if err := o.Release(rctx, id); err != nil {
					o.log.Warn("lease release failed", "feed", id, "err", err)
				}
			}
			cancel()
			return
		case <-t.C:
			o.renew(ctx)
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
	for _, id := range o.heldIDs() {
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
