package dedupe_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
)

func ownerStore(t *testing.T) *dedupe.Redis {
	c, prefix := dedupetest.Redis(t)
	return dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
}

// TestOwnerPausedHolderIsFenced plays a holder that stops (a GC pause, a
// starved process) past its lease while another worker takes the feed:
// when it resumes, its poll's context is over, its check before the commit
// fails, and the store refuses the commit anyway.
func TestOwnerPausedHolderIsFenced(t *testing.T) {
	s := ownerStore(t)
	ctx := context.Background()
	a := dedupe.NewOwner(s, "a", 300*time.Millisecond, nil)
	b := dedupe.NewOwner(s, "b", time.Minute, nil)
	if own, err := a.Own(ctx, "f"); err != nil || !own {
		t.Fatalf("a owns a free feed = %v, %v", own, err)
	}
	hctx, done, err := a.Hold(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	token, err := a.Fence(hctx, "f")
	if err != nil || token == 0 {
		t.Fatalf("a's fence while held = %d, %v", token, err)
	}
	// a is paused: nothing renews its lease (its Run is not running).
	waitUntil(t, func() bool { own, err := b.Own(ctx, "f"); return err == nil && own })
	select {
	case <-hctx.Done():
		if !errors.Is(context.Cause(hctx), dedupe.ErrLeaseLost) {
			t.Errorf("a's hold ended with %v; want ErrLeaseLost", context.Cause(hctx))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a's hold did not end after its lease ran out")
	}
	if _, err := a.Fence(hctx, "f"); !errors.Is(err, dedupe.ErrLeaseLost) {
		t.Errorf("a's check before the commit = %v; want ErrLeaseLost", err)
	}
	// Even a holder that skipped its checks cannot commit.
	_, err = s.Commit(ctx, "f", []dedupe.Change{change("x", "h", dedupe.ActionPublish)}, &dedupe.Validators{Fence: token}, t0)
	if !errors.Is(err, dedupe.ErrFenced) {
		t.Errorf("a's commit under its old token = %v; want ErrFenced", err)
	}
	if _, _, err := a.Hold(ctx, "f"); !errors.Is(err, dedupe.ErrLeaseLost) {
		t.Errorf("a's new hold on b's feed = %v; want ErrLeaseLost", err)
	}
}

// TestOwnerShutdownWaitsForPolls checks the shutdown order: a worker told
// to stop keeps (and renews) the lease of a feed it is still polling, and
// gives it up the moment the poll ends, not before and not a TTL later.
func TestOwnerShutdownWaitsForPolls(t *testing.T) {
	s := ownerStore(t)
	ctx := context.Background()
	a := dedupe.NewOwner(s, "a", 3*time.Second, nil)
	b := dedupe.NewOwner(s, "b", 3*time.Second, nil)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { a.Run(runCtx); close(ran) }()
	if own, err := a.OwnAll(ctx, []string{"busy", "idle"}); err != nil || !own["busy"] || !own["idle"] {
		t.Fatalf("a owns = %v, %v", own, err)
	}
	hctx, done, err := a.Hold(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	// The idle feed is released at once; the busy one stays a's.
	waitUntil(t, func() bool { own, err := b.Own(ctx, "idle"); return err == nil && own })
	if own, err := b.Own(ctx, "busy"); err != nil || own {
		t.Errorf("b took the feed a is still polling = %v, %v", own, err)
	}
	if own, _ := a.Own(ctx, "other"); own {
		t.Error("a stopping took a new lease")
	}
	if hctx.Err() != nil {
		t.Errorf("a's poll was cut by the shutdown: %v", context.Cause(hctx))
	}
	done()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the last poll ended")
	}
	if own, err := b.Own(ctx, "busy"); err != nil || !own {
		t.Errorf("b owns the feed after a's poll ended = %v, %v; want it released", own, err)
	}
}

// TestOwnersShareFeedsOut starts one running worker that takes every feed,
// then a second: the first hands the second its share (rendezvous hashing
// over the live workers), and when the second stops, takes it back.
func TestOwnersShareFeedsOut(t *testing.T) {
	s := ownerStore(t)
	ctx := context.Background()
	const ttl = 600 * time.Millisecond
	var ids []string
	for i := range 40 {
		ids = append(ids, fmt.Sprint("feed", i))
	}
	a := dedupe.NewOwner(s, "a", ttl, nil)
	a.SetFeeds(ids)
	aCtx, stopA := context.WithCancel(ctx)
	defer stopA()
	go a.Run(aCtx)
	count := func(o *dedupe.Owner) int {
		got, err := o.OwnAll(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, own := range got {
			if own {
				n++
			}
		}
		return n
	}
	waitUntil(t, func() bool { return count(a) == len(ids) })
	b := dedupe.NewOwner(s, "b", ttl, nil)
	b.SetFeeds(ids)
	bCtx, stopB := context.WithCancel(ctx)
	bDone := make(chan struct{})
	go func() { b.Run(bCtx); close(bDone) }()
	// b asks for every feed at each of its polls, as the poller does.
	waitUntil(t, func() bool { nb := count(b); na := count(a); return nb > 0 && na > 0 && na+nb == len(ids) })
	nb := count(b)
	t.Logf("shared out: a %d, b %d of %d", len(ids)-nb, nb, len(ids))
	if nb < len(ids)/4 || nb > 3*len(ids)/4 {
		t.Errorf("b got %d of %d feeds; want about half", nb, len(ids))
	}
	stopB()
	<-bDone
	waitUntil(t, func() bool { return count(a) == len(ids) })
}

// feedIDs names n feeds from first on.
func feedIDs(first, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprint("feed", first+i)
	}
	return ids
}

// pollRound is one round of a worker's poller: it asks for every feed it
// polls and returns those it holds now.
func pollRound(t *testing.T, o *dedupe.Owner, ids []string) map[string]bool {
	t.Helper()
	got, err := o.OwnAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for id, own := range got {
		if own {
			held[id] = true
		}
	}
	return held
}

// TestOwnersWithDifferentFeedListsPollEveryFeed runs two workers whose
// feed lists overlap by half: a feed that rendezvous hashing prefers for
// the worker that lacks it must still be polled, by the one that has it.
func TestOwnersWithDifferentFeedListsPollEveryFeed(t *testing.T) {
	s := ownerStore(t)
	ctx, stop := context.WithCancel(context.Background())
	const ttl = 600 * time.Millisecond
	listA, listB := feedIDs(0, 40), feedIDs(20, 40) // feed20..feed39 in both
	a, b := dedupe.NewOwner(s, "a", ttl, nil), dedupe.NewOwner(s, "b", ttl, nil)
	a.SetFeeds(listA)
	b.SetFeeds(listB)
	var wg sync.WaitGroup
	for _, o := range []*dedupe.Owner{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); o.Run(ctx) }()
	}
	defer func() { stop(); wg.Wait() }()
	// Every feed of either list is held by a worker that polls it, once
	// both know of each other (a round of heartbeats).
	var missing []string
	waitUntil(t, func() bool {
		ha, hb := pollRound(t, a, listA), pollRound(t, b, listB)
		missing = missing[:0]
		for _, id := range feedIDs(0, 60) {
			if ha[id] && hb[id] {
				t.Fatalf("%s held by both workers at once", id)
			}
			if !ha[id] && !hb[id] {
				missing = append(missing, id)
			}
		}
		return len(missing) == 0
	})
	// And they stay so while both run: no feed is handed to a worker
	// without it.
	for range 5 {
		time.Sleep(ttl / 3)
		ha, hb := pollRound(t, a, listA), pollRound(t, b, listB)
		for _, id := range feedIDs(0, 60) {
			if !ha[id] && !hb[id] {
				t.Errorf("%s polled by neither worker", id)
			}
		}
	}
}

// deadStore is the store as a worker killed with SIGKILL sees it: once
// dead, nothing it would send reaches Redis (no heartbeat, renewal,
// release or leave), so its member entry and leases stay until they
// expire.
type deadStore struct {
	*dedupe.Redis
	dead atomic.Bool
}

var errKilled = errors.New("process killed")

func (d *deadStore) Heartbeat(ctx context.Context, owner string, ttl time.Duration) ([]string, error) {
	if d.dead.Load() {
		return nil, errKilled
	}
	return d.Redis.Heartbeat(ctx, owner, ttl)
}

func (d *deadStore) Leave(ctx context.Context, owner string) error {
	if d.dead.Load() {
		return errKilled
	}
	return d.Redis.Leave(ctx, owner)
}

func (d *deadStore) AcquireFeedLeases(ctx context.Context, ids []string, owner string, ttl time.Duration) ([]int64, error) {
	if d.dead.Load() {
		return nil, errKilled
	}
	return d.Redis.AcquireFeedLeases(ctx, ids, owner, ttl)
}

func (d *deadStore) RenewFeedLeases(ctx context.Context, ids []string, owner string, ttl time.Duration) ([]bool, error) {
	if d.dead.Load() {
		return nil, errKilled
	}
	return d.Redis.RenewFeedLeases(ctx, ids, owner, ttl)
}

func (d *deadStore) ReleaseFeedLeases(ctx context.Context, ids []string, owner string) error {
	if d.dead.Load() {
		return errKilled
	}
	return d.Redis.ReleaseFeedLeases(ctx, ids, owner)
}

// TestOwnersTakeOverFromKilledWorker shares feeds between two workers,
// then kills one (it stops talking to Redis mid-run, as after SIGKILL):
// its member entry and leases expire after the TTL and the survivor
// takes every feed.
func TestOwnersTakeOverFromKilledWorker(t *testing.T) {
	s := ownerStore(t)
	ctx := context.Background()
	const ttl = 600 * time.Millisecond
	ids := feedIDs(0, 40)
	ghost := &deadStore{Redis: s}
	a, g := dedupe.NewOwner(s, "a", ttl, nil), dedupe.NewOwner(ghost, "g", ttl, nil)
	a.SetFeeds(ids)
	g.SetFeeds(ids)
	aCtx, stopA := context.WithCancel(ctx)
	gCtx, stopG := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.Run(aCtx) }()
	go func() { defer wg.Done(); g.Run(gCtx) }()
	defer func() { stopA(); stopG(); wg.Wait() }()
	waitUntil(t, func() bool {
		na, ng := len(pollRound(t, a, ids)), len(pollRound(t, g, ids))
		return na > 0 && ng > 0 && na+ng == len(ids)
	})
	ng := len(pollRound(t, g, ids))
	ghost.dead.Store(true)
	stopG() // its leave and releases fail: nothing reaches Redis
	killed := time.Now()
	waitUntil(t, func() bool { return len(pollRound(t, a, ids)) == len(ids) })
	t.Logf("the killed worker held %d of %d feeds; the survivor held them all %v after the kill (lease TTL %v)",
		ng, len(ids), time.Since(killed).Round(10*time.Millisecond), ttl)
}
