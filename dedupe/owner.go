package dedupe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// ErrLeaseLost reports that this worker can no longer prove it holds a
// feed's lease: it stops using the feed (its poll is cancelled, its
// commit refused) until it takes the lease again.
var ErrLeaseLost = errors.New("feed lease lost or no longer provable")

// Owner shares feeds among workers through the store's feed leases, so
// that each feed is polled by one worker at a time. It implements the
// poller's Owner hook (Own, OwnAll) and Hold.
//
// A lease is trusted only as long as it provably runs: until the TTL
// counted from before the request that took or last renewed it (the
// store's clock starts later, so it expires later), minus a margin. Held
// leases are renewed every third of the TTL. A poll runs under [Owner.Hold],
// whose context ends the moment the lease is no longer provable, and its
// commit carries the lease's fencing token ([Owner.Fence]), so a holder
// paused past its lease cannot overwrite the next holder's work: the store
// refuses it ([ErrFenced]).
type Owner struct {
	s      FeedLeaser
	ms     Membership // nil: no sharing out, whoever asks first polls
	id     string
	ttl    time.Duration
	margin time.Duration
	log    *slog.Logger

	mu sync.Mutex
	// held maps a feed to its lease: until when it surely runs, and its
	// fencing token.
	held map[string]lease
	// active counts the holds (polls) in progress per feed; a feed in use
	// is released only when its holds end.
	active  map[string]int
	closing bool
	idle    chan struct{} // signalled when a hold ends
	// members are the running workers (Run's heartbeats) as they name
	// themselves in the store (see memberName), this one included; empty
	// while Run is not running (feedworker once polls every feed it can
	// take).
	members []string
	// feeds is the fingerprint of the feeds this worker polls (SetFeeds),
	// "" until set; name is this worker's member name as last sent.
	feeds string
	name  string
}

type lease struct {
	until time.Time
	token int64
}

// NewOwner returns an Owner named id (unique per worker process) holding
// leases for ttl. A nil logger discards.
//
// When s also implements [Membership], running Owners (Run) share the
// feeds out: each takes only the feeds that rendezvous hashing over the
// live workers gives it, and gives back the others as soon as it is not
// polling them, so a worker that joins gets its share and one that leaves
// hands its feeds over (one that dies, when its heartbeat expires: one TTL
// after its last heartbeat). A worker leaves a feed to the one rendezvous
// hashing prefers only when that one polls the same feeds (the same
// fingerprint, [Owner.SetFeeds]); otherwise it cannot know the other has
// the feed at all, and takes the feed's lease if it is free, as without
// sharing. Replicas with different feed lists therefore poll every feed,
// each once at a time, but are balanced only among those with equal lists.
func NewOwner(s FeedLeaser, id string, ttl time.Duration, log *slog.Logger) *Owner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ms, _ := s.(Membership)
	return &Owner{s: s, ms: ms, id: id, ttl: ttl, margin: ttl / 4, log: log,
		held: map[string]lease{}, active: map[string]int{}, idle: make(chan struct{}, 1)}
}

// SetFeeds tells the owner which feeds this worker polls (at start and
// after each reload). Only workers that told the same list share feeds out
// by rendezvous hashing; see [NewOwner].
func (o *Owner) SetFeeds(feedIDs []string) {
	fp := feedsFingerprint(feedIDs)
	o.mu.Lock()
	o.feeds = fp
	o.mu.Unlock()
}

// notMine reports whether another running worker is given feedID and
// surely polls it (it told the same feeds); called with o.mu held.
func (o *Owner) notMine(feedID string) bool {
	if len(o.members) < 2 || o.feeds == "" {
		return false
	}
	p := preferred(o.members, feedID)
	return p != o.name && memberFeeds(p) == o.feeds
}

func leaseName(feedID string) string { return "feed:" + feedID }

// trusted reports whether l runs for more than d from now.
func trusted(l lease, ok bool, d time.Duration) bool { return ok && time.Until(l.until) > d }

// Own reports whether this worker holds feedID's lease now, taking it if it
// is free. A lease known to run for more than half its TTL is trusted
// without asking the store.
func (o *Owner) Own(ctx context.Context, feedID string) (bool, error) {
	got, err := o.OwnAll(ctx, []string{feedID})
	if err != nil {
		return false, err
	}
	return got[feedID], nil
}

// OwnAll is Own for many feeds in one store round trip: it reports, per
// feed, whether this worker holds its lease now, taking the free ones.
// Once the owner is closing (Run's context ended), it takes nothing.
func (o *Owner) OwnAll(ctx context.Context, feedIDs []string) (map[string]bool, error) {
	out := make(map[string]bool, len(feedIDs))
	var ask []string
	o.mu.Lock()
	if o.closing {
		o.mu.Unlock()
		return out, nil
	}
	for _, id := range feedIDs {
		l, ok := o.held[id]
		switch {
		case trusted(l, ok, o.ttl/2):
			out[id] = true
		case !ok && o.notMine(id):
			out[id] = false // another worker's share
		default:
			ask = append(ask, id)
		}
	}
	o.mu.Unlock()
	if len(ask) == 0 {
		return out, nil
	}
	start := time.Now()
	tokens, err := o.s.AcquireFeedLeases(ctx, ask, o.id, o.ttl)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, id := range ask {
		out[id] = tokens[i] != 0
		if tokens[i] != 0 {
			o.held[id] = lease{until: start.Add(o.ttl), token: tokens[i]}
		} else {
			delete(o.held, id)
		}
	}
	return out, nil
}

type holdKey struct{}

type holding struct {
	feedID string
	token  int64
}

// Hold starts a use of feedID (a poll) under its lease: it returns a
// context that ends with [ErrLeaseLost] as its cause the moment the lease
// is no longer provable (its renewal did not come in time), and done, to
// call when the use ends. The lease must be held (Own said so); otherwise
// Hold fails with ErrLeaseLost. The context carries the lease's fencing
// token for [Owner.Fence].
func (o *Owner) Hold(ctx context.Context, feedID string) (context.Context, func(), error) {
	o.mu.Lock()
	l, ok := o.held[feedID]
	if o.closing || !trusted(l, ok, o.margin) {
		o.mu.Unlock()
		return nil, nil, fmt.Errorf("feed %s: %w", feedID, ErrLeaseLost)
	}
	o.active[feedID]++
	o.mu.Unlock()

	hctx, cancel := context.WithCancelCause(context.WithValue(ctx, holdKey{}, holding{feedID, l.token}))
	stop := make(chan struct{})
	go o.watch(hctx, cancel, stop, feedID, l.token)
	var once sync.Once
	done := func() {
		once.Do(func() {
			close(stop)
			cancel(context.Canceled)
			o.mu.Lock()
			if o.active[feedID]--; o.active[feedID] <= 0 {
				delete(o.active, feedID)
			}
			o.mu.Unlock()
			select {
			case o.idle <- struct{}{}:
			default:
			}
		})
	}
	return hctx, done, nil
}

// watch cancels a hold when its lease stops being provable: at the
// lease's deadline minus the margin, unless a renewal moved the deadline
// (then it waits for the new one), or at once when the lease was lost or
// passed to a new holding (another token).
func (o *Owner) watch(ctx context.Context, cancel context.CancelCauseFunc, stop <-chan struct{}, feedID string, token int64) {
	for {
		o.mu.Lock()
		l, ok := o.held[feedID]
		o.mu.Unlock()
		if !ok || l.token != token {
			cancel(fmt.Errorf("feed %s: %w: taken by another worker", feedID, ErrLeaseLost))
			return
		}
		wait := time.Until(l.until) - o.margin
		if wait <= 0 {
			cancel(fmt.Errorf("feed %s: %w: not renewed in time", feedID, ErrLeaseLost))
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-stop:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// Fence is the check before a commit: it returns the fencing token of the
// lease the hold in ctx was started under, if that lease is still held
// with the same token and provably runs for more than the margin;
// otherwise ErrLeaseLost. The store checks the token again, atomically
// with the commit.
func (o *Owner) Fence(ctx context.Context, feedID string) (int64, error) {
	h, ok := ctx.Value(holdKey{}).(holding)
	if !ok || h.feedID != feedID {
		return 0, fmt.Errorf("feed %s: %w: no hold in this context", feedID, ErrLeaseLost)
	}
	o.mu.Lock()
	l, held := o.held[feedID]
	o.mu.Unlock()
	if !held || l.token != h.token || !trusted(l, held, o.margin) {
		return 0, fmt.Errorf("feed %s: %w before the commit", feedID, ErrLeaseLost)
	}
	return h.token, nil
}

// Release gives feedID's lease up, if this worker holds it (the feed left
// the configuration).
func (o *Owner) Release(ctx context.Context, feedID string) error {
	o.mu.Lock()
	delete(o.held, feedID)
	o.mu.Unlock()
	return o.s.ReleaseFeedLeases(ctx, []string{feedID}, o.id)
}

// Run renews the held leases until ctx is done. Then it takes no new
// lease, releases those of feeds not being polled at once, keeps renewing
// those of polls still running (a shutdown lets them finish) and releases
// each when its poll ends: another worker can take a feed over at once,
// never while this one still polls it.
func (o *Owner) Run(ctx context.Context) {
	t := time.NewTicker(o.ttl / 3)
	defer t.Stop()
	o.heartbeat(ctx)
	for {
		select {
		case <-ctx.Done():
			o.leave(context.WithoutCancel(ctx))
			o.drain(context.WithoutCancel(ctx), t.C)
			return
		case <-t.C:
			o.heartbeat(ctx)
			o.renew(ctx)
			o.handOver(ctx)
		}
	}
}

// heartbeat marks this worker alive and learns who else is.
func (o *Owner) heartbeat(ctx context.Context) {
	if o.ms == nil {
		return
	}
	o.mu.Lock()
	name, prev := memberName(o.id, o.feeds), o.name
	o.mu.Unlock()
	if prev != "" && prev != name {
		// The feeds changed (a reload): the entry under the old list must
		// not outlive it, or others would leave it feeds this worker no
		// longer polls until it expired.
		if err := o.ms.Leave(ctx, prev); err != nil {
			o.log.Warn("replacing the worker's member entry failed; the old one expires after the TTL", "err", err)
		}
	}
	m, err := o.ms.Heartbeat(ctx, name, o.ttl)
	if err != nil {
		// Keep the last list: feeds are shared as before.
		o.log.Warn("worker heartbeat failed", "err", err)
		return
	}
	o.mu.Lock()
	o.members, o.name = m, name
	o.mu.Unlock()
}

// leave takes this worker out of the members, so that the others take its
// share at their next poll, and stops sharing out.
func (o *Owner) leave(ctx context.Context) {
	if o.ms == nil {
		return
	}
	o.mu.Lock()
	o.members = nil
	name := o.name
	o.mu.Unlock()
	if name == "" {
		return // never joined
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := o.ms.Leave(lctx, name); err != nil {
		o.log.Warn("leaving the workers failed; the others take over when the heartbeat expires", "err", err)
	}
}

// handOver releases the held leases of feeds another running worker is
// given now (one joined), unless this worker is polling them: that worker
// takes them at its next poll.
func (o *Owner) handOver(ctx context.Context) {
	o.mu.Lock()
	var ids []string
	for id := range o.held {
		if o.active[id] == 0 && o.notMine(id) {
			ids = append(ids, id)
			delete(o.held, id)
		}
	}
	o.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	if err := o.s.ReleaseFeedLeases(ctx, ids, o.id); err != nil {
		o.log.Warn("handing feeds over failed; they move when the leases expire", "feeds", len(ids), "err", err)
		return
	}
	o.log.Info("feeds handed over to other workers", "feeds", len(ids))
}

// drain releases the leases as their holds end, renewing the others.
func (o *Owner) drain(ctx context.Context, tick <-chan time.Time) {
	o.mu.Lock()
	o.closing = true
	o.mu.Unlock()
	for {
		o.ReleaseAll(ctx)
		o.mu.Lock()
		n := len(o.active)
		o.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-o.idle:
		case <-tick:
			o.renew(ctx)
		}
	}
}

// ReleaseAll gives up every lease this worker holds and is not using, so
// that another worker (or the next `feedworker once`) can take the feeds at
// once rather than after the TTL. It runs even when ctx is done, for at
// most 5s.
func (o *Owner) ReleaseAll(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	o.mu.Lock()
	ids := make([]string, 0, len(o.held))
	for id := range o.held {
		if o.active[id] == 0 {
			ids = append(ids, id)
			delete(o.held, id)
		}
	}
	o.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	if err := o.s.ReleaseFeedLeases(rctx, ids, o.id); err != nil {
		// They expire after the TTL anyway.
		o.log.Warn("lease release failed", "feeds", len(ids), "err", err)
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

// renew extends every held lease in one round trip. A lease the store
// says is gone is dropped at once (its holds are cancelled by their
// watchers); on an error the old deadlines stand, and holds end when they
// pass.
func (o *Owner) renew(ctx context.Context) {
	ids := o.heldIDs()
	if len(ids) == 0 {
		return
	}
	start := time.Now()
	ok, err := o.s.RenewFeedLeases(ctx, ids, o.id, o.ttl)
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.log.Warn("lease renewal failed", "feeds", len(ids), "err", err)
		return
	}
	for i, id := range ids {
		l, still := o.held[id]
		switch {
		case !still:
		case !ok[i]:
			delete(o.held, id)
			o.log.Info("lease lost to another worker", "feed", id)
		default:
			l.until = start.Add(o.ttl)
			o.held[id] = l
		}
	}
}
