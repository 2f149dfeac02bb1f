package dedupe_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
)

// countRT returns the round trips fn cost.
func countRT(rt *dedupe.RoundTripCounter, fn func()) int64 {
	before := rt.Count()
	fn()
	return rt.Count() - before
}

// TestOwnerBatches checks that a pass's leases cost one round trip to take,
// one to renew and one to give back, whatever the number of feeds, with
// the same answers as one lease at a time.
func TestOwnerBatches(t *testing.T) {
	c, prefix := dedupetest.Redis(t)
	rt := &dedupe.RoundTripCounter{}
	c.AddHook(rt)
	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
	ctx := t.Context()
	a := dedupe.NewOwner(s, "a", time.Minute, nil)
	b := dedupe.NewOwner(s, "b", time.Minute, nil)
	var ids []string
	for i := range 1200 { // more than one script's chunk
		ids = append(ids, fmt.Sprint("feed", i))
	}
	if ok, err := b.Own(ctx, "feed7"); err != nil || !ok {
		t.Fatalf("b.Own(feed7) = %v, %v", ok, err)
	}
	_, _ = a.OwnAll(ctx, ids[:1]) // load the script
	var got map[string]bool
	var err error
	if n := countRT(rt, func() { got, err = a.OwnAll(ctx, ids) }); n != 1 {
		t.Errorf("OwnAll of %d feeds: %d round trips, want 1", len(ids), n)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if want := id != "feed7"; got[id] != want {
			t.Errorf("a owns %s = %v, want %v", id, got[id], want)
		}
	}
	if n := countRT(rt, func() {
		if ok, _ := a.Own(ctx, "feed3"); !ok {
			t.Error("a.Own(feed3) after OwnAll took it = false")
		}
	}); n != 0 {
		t.Errorf("Own of a lease OwnAll took: %d round trips, want 0", n)
	}
	if ok, _ := b.Own(ctx, "feed3"); ok {
		t.Error("b took feed3, which a holds")
	}
	// Everything a holds is held for the TTL again after a second OwnAll
	// far enough into the TTL; within its first half no store call is made.
	if n := countRT(rt, func() { _, _ = a.OwnAll(ctx, ids[1:5]) }); n != 0 {
		t.Errorf("OwnAll of freshly held leases: %d round trips, want 0", n)
	}

	a.ReleaseAll(ctx) // loads the script
	if ok, err := b.Own(ctx, "feed3"); err != nil || !ok {
		t.Errorf("b.Own(feed3) after a released all = %v, %v; want true", ok, err)
	}
	if _, err := a.OwnAll(ctx, ids[10:20]); err != nil {
		t.Fatal(err)
	}
	if n := countRT(rt, func() { a.ReleaseAll(ctx) }); n != 1 {
		t.Errorf("ReleaseAll: %d round trips, want 1", n)
	}
	if got, err := b.OwnAll(ctx, ids[10:20]); err != nil || len(got) != 10 || !got["feed15"] {
		t.Errorf("b.OwnAll after a released = %v, %v; want all 10", got, err)
	}
}

// TestOwnerRenewsInOneRoundTrip checks that a running Owner renews every
// lease it holds in one round trip (plus one for its heartbeat) and keeps
// them past the TTL.
func TestOwnerRenewsInOneRoundTrip(t *testing.T) {
	c, prefix := dedupetest.Redis(t)
	rt := &dedupe.RoundTripCounter{}
	c.AddHook(rt)
	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
	ctx := t.Context()
	const ttl = 600 * time.Millisecond
	a := dedupe.NewOwner(s, "a", ttl, nil)
	var ids []string
	for i := range 50 {
		ids = append(ids, fmt.Sprint("feed", i))
	}
	if _, err := a.OwnAll(ctx, ids); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	before := rt.Count()
	go func() { a.Run(runCtx); close(done) }()
	// Wait for nine ticks (a tick every ttl/3, so three TTLs), each two
	// round trips (the heartbeat and the renewals); polled, since a loaded
	// machine delays ticks.
	deadline := time.Now().Add(30 * time.Second)
	for rt.Count()-before < 18 {
		if time.Now().After(deadline) {
			t.Fatalf("%d round trips in 30s; want the 18 of nine ticks", rt.Count()-before)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Two per tick, not one per lease per tick: a tick renewing leases one
	// by one would alone cost 50.
	if n := rt.Count() - before; n >= int64(len(ids)) {
		t.Errorf("renewing 50 leases for nine ticks cost %d round trips, want two per tick", n)
	}
	b := dedupe.NewOwner(s, "b", ttl, nil)
	got, err := b.OwnAll(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if got[id] {
			t.Errorf("b took %s three TTLs later although a renews it", id)
		}
	}
	cancel()
	<-done
}

// TestRedisValidatorsMany checks the batch read against the one-feed read.
func TestRedisValidatorsMany(t *testing.T) {
	c, prefix := dedupetest.Redis(t)
	rt := &dedupe.RoundTripCounter{}
	c.AddHook(rt)
	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
	ctx := t.Context()
	mustCommit(t, s, "f1", []dedupe.Change{change("x", "h", dedupe.ActionSeeOnly)}, &dedupe.Validators{ETag: `"e1"`, LastModified: "lm1"}, t0)
	mustDiff(t, s, "f3", nil, &dedupe.Validators{ETag: `"e3"`}, t0)
	var v []dedupe.Validators
	var ok []bool
	var err error
	_, _, _ = s.ValidatorsMany(ctx, []string{"f1"}) // a fresh connection costs a handshake
	if n := countRT(rt, func() { v, ok, err = s.ValidatorsMany(ctx, []string{"f1", "f2", "f3"}) }); n != 1 {
		t.Errorf("ValidatorsMany: %d round trips, want 1", n)
	}
	if err != nil {
		t.Fatal(err)
	}
	want := []dedupe.Validators{{ETag: `"e1"`, LastModified: "lm1"}, {}, {ETag: `"e3"`}}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("validators (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{true, false, true}, ok); diff != "" {
		t.Errorf("ok (-want +got):\n%s", diff)
	}
	for i, id := range []string{"f1", "f2", "f3"} {
		one, found, err := s.Validators(ctx, id)
		if err != nil || found != ok[i] || one != v[i] {
			t.Errorf("Validators(%s) = %+v, %v, %v; ValidatorsMany said %+v, %v", id, one, found, err, v[i], ok[i])
		}
	}
	if _, _, err := s.ValidatorsMany(ctx, []string{"bad/id"}); err == nil {
		t.Error("ValidatorsMany accepted a feed id with a slash")
	}
}

// TestRedisSettleMany checks that outcomes recorded together end as they do
// one by one, in one round trip, and survive a Redis that lost its scripts.
func TestRedisSettleMany(t *testing.T) {
	srv := dedupetest.StartServer(t)
	c := redis.NewClient(srv.Options())
	t.Cleanup(func() { c.Close() })
	rt := &dedupe.RoundTripCounter{}
	c.AddHook(rt)
	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: "p:"})
	ctx := t.Context()
	// The scripts flushed between the claim and the settlements.
	ch := checkSettleMany(t, s, func() {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	})
	// Steady state: one round trip for the lot.
	mustCommit(t, s, "g", ch, nil, t0)
	claimed := mustClaim(t, s, "w", 6, t0)
	var ops []dedupe.SettleOp
	var errs []error
	for i, cl := range claimed {
		ops = append(ops, dedupe.SettleOp{Key: cl.Key, Settlement: dedupe.Settlement{Kind: dedupe.Delivered, ContentID: int64(100 + i), Type: "story", Hash: "h1"}})
	}
	if n := countRT(rt, func() { _, errs = s.SettleMany(ctx, "w", ops, t0) }); n != 1 {
		t.Errorf("SettleMany of %d: %d round trips, want 1", len(ops), n)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("op %d: %v", i, err)
		}
	}
}

// settleManyStore is a store that records many outcomes at once.
type settleManyStore interface {
	dedupe.Store
	dedupe.SettleBatcher
}

// checkSettleMany checks that outcomes recorded together end as they do one
// by one, an invalid one failing alone; between the claim and the
// settlements it runs between (nil: nothing). It returns the changes it
// committed, for more of the same.
func checkSettleMany(t *testing.T, s settleManyStore, between func()) []dedupe.Change {
	t.Helper()
	ch, claimed := queueAndClaim(t, s, 6)
	if between != nil {
		between()
	}
	ops := []dedupe.SettleOp{
		{Key: claimed[0].Key, Settlement: dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 10, Type: "story", Hash: "h1"}},
		{Key: claimed[1].Key, Settlement: dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 11, Type: "story", Hash: "h1"}},
		{Key: claimed[2].Key, Settlement: dedupe.Settlement{Kind: dedupe.Retry, Next: t0.Add(time.Hour), Status: 503, Reason: "busy"}},
		{Key: claimed[3].Key, Settlement: dedupe.Settlement{Kind: dedupe.Dead, Status: 400, Reason: "bad"}},
		{Key: claimed[4].Key, Settlement: dedupe.Settlement{Kind: dedupe.Delivered}}, // no content id: invalid
	}
	held, errs := s.SettleMany(t.Context(), "w", ops, t0)
	for i, want := range []bool{true, true, true, true, false} {
		if held[i] != want {
			t.Errorf("op %d held = %v, want %v", i, held[i], want)
		}
	}
	for i, err := range errs {
		if wantErr := i == 4; (err != nil) != wantErr {
			t.Errorf("op %d error = %v, want error %v", i, err, wantErr)
		}
	}
	for i, want := range []int64{10, 11} {
		if r := mustRecord(t, s, "f", claimed[i].Key.ExternalID); r.ContentID != want || r.PendingHash != "" {
			t.Errorf("record %d = %+v, want content %d and no pending mark", i, r, want)
		}
	}
	if st := mustStats(t, s, t0); st.Outbox != 3 || st.DeadLetters != 1 || st.Due != 2 {
		// Queued: item 2 (retry in an hour), 4 (its settlement refused)
		// and 5 (not settled); item 3 is a dead letter.
		t.Errorf("stats = %+v, want outbox 3 (due 2), dead letters 1", st)
	}
	return ch
}

// TestRedisAliasScriptsFlushed checks that PutAliases and ReserveAliases,
// which run their scripts by digest, still work on a Redis that lost its
// scripts (a restart): the calls the digest missed are run again.
func TestRedisAliasScriptsFlushed(t *testing.T) {
	srv := dedupetest.StartServer(t)
	c := redis.NewClient(srv.Options())
	t.Cleanup(func() { c.Close() })
	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: "p:"})
	ctx := t.Context()
	flush := func() {
		t.Helper()
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	a1 := dedupe.Key{FeedID: "a", ExternalID: "e1"}
	b1 := dedupe.Key{FeedID: "b", ExternalID: "x"}
	global := dedupe.AliasFP{FP: "u:example.com/one"}
	feed := dedupe.AliasFP{FeedID: "a", FP: "u:example.com/one"}
	now := time.Now()
	flush()
	if err := s.PutAliases(ctx, []dedupe.Alias{{AliasFP: feed, Target: a1, Type: "story"}, {AliasFP: global, Target: a1, Type: "story", Extra: "t"}}, now); err != nil {
		t.Fatalf("PutAliases after a script flush: %v", err)
	}
	got, err := s.LookupAliases(ctx, []dedupe.AliasFP{feed, global}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Found || got[0].Target != a1 || !got[1].Found || got[1].Target != a1 || got[1].Extra != "t" {
		t.Fatalf("aliases put after a script flush: %+v", got)
	}
	flush()
	held, err := s.ReserveAliases(ctx, []dedupe.Alias{{AliasFP: global, Target: b1, Type: "story"}, {AliasFP: dedupe.AliasFP{FP: "u:example.com/two"}, Target: b1, Type: "story"}}, now)
	if err != nil {
		t.Fatalf("ReserveAliases after a script flush: %v", err)
	}
	if held[0].Target != a1 || held[1].Target != b1 || held[1].Since.IsZero() {
		t.Fatalf("reservations after a script flush: %+v", held)
	}
	// The first holder keeps an alias across feeds, whatever the script's state.
	flush()
	if err := s.PutAliases(ctx, []dedupe.Alias{{AliasFP: global, Target: b1, Type: "story"}}, now); err != nil {
		t.Fatal(err)
	}
	if got, err = s.LookupAliases(ctx, []dedupe.AliasFP{global}, now); err != nil || got[0].Target != a1 {
		t.Fatalf("alias across feeds after another target's put: %+v, %v", got, err)
	}
}
