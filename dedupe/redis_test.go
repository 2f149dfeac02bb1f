package dedupe_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
)

// TestRedisRoundTrips pins the cost of the hot path: a poll with nothing
// new is one round trip, whatever the number of items.
func TestRedisRoundTrips(t *testing.T) {
	c, prefix := dedupetest.Redis(t)
	var rt dedupe.RoundTripCounter
	c.AddHook(&rt)
	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})

	var it []dedupe.Item
	var ch []dedupe.Change
	for i := range 200 {
		it = append(it, dedupe.Item{ExternalID: fmt.Sprint("item", i), Hash: "h"})
		ch = append(ch, change(fmt.Sprint("item", i), "h", dedupe.ActionSeeOnly))
	}
	v := &dedupe.Validators{ETag: "e"}
	// Warm the script cache: a first EVALSHA may need an EVAL.
	mustDiff(t, s, "f", it, v, t0)
	mustCommit(t, s, "f", ch, v, t0)

	tests := []struct {
		name string
		fn   func()
		want int64
	}{
		{"diff nothing new", func() { mustDiff(t, s, "f", it, v, t0) }, 1},
		{"commit", func() { mustCommit(t, s, "f", ch[:1], v, t0) }, 1},
		{"claim", func() { mustClaim(t, s, "w", 1, t0) }, 1},
		{"record", func() { mustRecord(t, s, "f", "item1") }, 1},
		{"stats", func() { mustStats(t, s, t0) }, 1},
	}
	for _, tc := range tests {
		// The first run may load the script (NOSCRIPT, then EVAL) or dial
		// a connection (HELLO): count the steady state.
		tc.fn()
		before := rt.Count()
		tc.fn()
		if got := rt.Count() - before; got != tc.want {
			t.Errorf("%s: %d round trips; want %d", tc.name, got, tc.want)
		}
	}
}

// TestRedisPrefixIsolation checks that two deployments sharing one Redis
// under different prefixes do not see each other's items.
func TestRedisPrefixIsolation(t *testing.T) {
	c, prefix := dedupetest.Redis(t)
	a := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix + "a:"})
	b := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix + "b:"})
	mustCommit(t, a, "f", []dedupe.Change{change("x", "h", dedupe.ActionPublish)}, nil, t0)
	if d := mustDiff(t, b, "f", items("x", "h"), nil, t0); d.Status[0] != dedupe.StatusNew || d.Known {
		t.Errorf("other prefix Diff = %+v; want x new on an unknown feed", d)
	}
	if st := mustStats(t, b, t0); st.Outbox != 0 {
		t.Errorf("other prefix outbox = %d; want 0", st.Outbox)
	}
}

// TestOwnerSharesFeeds checks the lease helper the worker uses: one owner
// per feed at a time, feeds spread over owners, and a dead owner's feeds
// taken over after the TTL.
func TestOwnerSharesFeeds(t *testing.T) {
	c, prefix := dedupetest.Redis(t)
	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
	ctx := t.Context()
	a := dedupe.NewOwner(s, "a", 300*time.Millisecond, nil)
	b := dedupe.NewOwner(s, "b", time.Minute, nil)
	owned := map[string]string{}
	for i := range 6 {
		feed := fmt.Sprint("feed", i)
		first, second := a, b
		if i%2 == 1 {
			first, second = b, a
		}
		for _, o := range []*dedupe.Owner{first, second} {
			ok, err := o.Own(ctx, feed)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				if prev, dup := owned[feed]; dup {
					t.Fatalf("%s owned by %s and %v", feed, prev, o)
				}
				owned[feed] = fmt.Sprint(o == a)
			}
		}
	}
	if len(owned) != 6 {
		t.Fatalf("owned %d feeds; want all 6", len(owned))
	}
	if ok, _ := a.Own(ctx, "feed0"); !ok {
		t.Errorf("a cannot renew its own feed")
	}
	// a dies: b takes its feeds once the leases expire.
	lapseWitness(t, s, 300*time.Millisecond)()
	if ok, err := b.Own(ctx, "feed0"); err != nil || !ok {
		t.Errorf("b.Own(feed0) after a's lease expired = %v, %v; want true", ok, err)
	}
	if err := b.Release(ctx, "feed0"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := a.Own(ctx, "feed0"); !ok {
		t.Errorf("a cannot take feed0 after b released it")
	}
}

// TestOwnerRenewsAndReleases checks that a running Owner keeps its leases
// past the TTL, answers for them without a round trip, and hands them over
// at once when it stops.
func TestOwnerRenewsAndReleases(t *testing.T) {
	c, prefix := dedupetest.Redis(t)
	counter := &dedupe.RoundTripCounter{}
	c.AddHook(counter)
	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
	ctx, cancel := context.WithCancel(t.Context())
	a := dedupe.NewOwner(s, "a", 300*time.Millisecond, nil)
	b := dedupe.NewOwner(s, "b", time.Minute, nil)
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()

	if ok, err := a.Own(t.Context(), "feed0"); err != nil || !ok {
		t.Fatalf("a.Own = %v, %v; want true", ok, err)
	}
	before := counter.Count()
	if ok, _ := a.Own(t.Context(), "feed0"); !ok {
		t.Fatal("a lost a lease it just took")
	}
	if n := counter.Count() - before; n != 0 {
		t.Errorf("Own of a held lease cost %d round trips; want 0", n)
	}
	lapseWitness(t, s, 2*300*time.Millisecond)() // twice the TTL: only renewals keep it
	if ok, _ := b.Own(t.Context(), "feed0"); ok {
		t.Fatal("b took feed0 although a is alive and renewing")
	}
	cancel()
	<-done
	if ok, err := b.Own(t.Context(), "feed0"); err != nil || !ok {
		t.Errorf("b.Own after a stopped = %v, %v; want true at once", ok, err)
	}
}
