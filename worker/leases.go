package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// leases lets several replicas share feeds through the store: a replica
// polls a feed only while it holds the feed's lease. Held leases are renewed
// in the background, so a poll of an owned feed costs no round trip, and a
// replica that dies loses its leases after the TTL.
type leases struct {
	store dedupe.Store
	owner string
	ttl   time.Duration
	log   *slog.Logger

	mu   sync.Mutex
	held map[string]time.Time // feed id → when our lease surely still runs until
}

func newLeases(store dedupe.Store, owner string, ttl time.Duration, log *slog.Logger) *leases {
	if ttl <= 0 {
		ttl = time.Minute
	}
	return &leases{store: store, owner: owner, ttl: ttl, log: log, held: map[string]time.Time{}}
}

func leaseName(feedID string) string { return "feed:" + feedID }

// Own reports whether this replica may poll feedID now, taking its lease if
// it is free.
func (l *leases) Own(ctx context.Context, feedID string) (bool, error) {
	l.mu.Lock()
	until, ok := l.held[feedID]
	l.mu.Unlock()
	if ok && time.Until(until) > l.ttl/2 {
		return true, nil
	}
	start := time.Now()
	got, err := l.store.AcquireLease(ctx, leaseName(feedID), l.owner, l.ttl)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil || !got {
		delete(l.held, feedID)
		return false, err
	}
	l.held[feedID] = start.Add(l.ttl)
	return true, nil
}

// run renews every held lease each third of the TTL until ctx is done, then
// releases them so another replica can take over at once.
func (l *leases) run(ctx context.Context) {
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			l.releaseAll(context.WithoutCancel(ctx))
			return
		case <-t.C:
			l.renewAll(ctx)
		}
	}
}

func (l *leases) renewAll(ctx context.Context) {
	l.mu.Lock()
	ids := make([]string, 0, len(l.held))
	for id := range l.held {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	for _, id := range ids {
		start := time.Now()
		ok, err := l.store.RenewLease(ctx, leaseName(id), l.owner, l.ttl)
		l.mu.Lock()
		switch {
		case err != nil:
			// Keep the entry: it expires on its own when renewals keep failing,
			// and Own then asks the store again.
			l.log.Warn("lease renewal failed", "feed", id, "err", err)
		case !ok:
			delete(l.held, id)
			l.log.Info("lease lost to another replica", "feed", id)
		default:
			l.held[id] = start.Add(l.ttl)
		}
		l.mu.Unlock()
	}
}

// release gives up one feed's lease (the feed was removed from the config).
func (l *leases) release(ctx context.Context, feedID string) {
	l.mu.Lock()
	_, ok := l.held[feedID]
	delete(l.held, feedID)
	l.mu.Unlock()
	if ok {
		if err := l.store.ReleaseLease(ctx, leaseName(feedID), l.owner); err != nil {
			l.log.Warn("lease release failed", "feed", feedID, "err", err)
		}
	}
}

func (l *leases) releaseAll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l.mu.Lock()
	ids := make([]string, 0, len(l.held))
	for id := range l.held {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	for _, id := range ids {
		l.release(ctx, id)
	}
}
