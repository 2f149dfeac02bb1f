package dedupe_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
)

// TestHeartbeatTakesDeadOwnersClaims: a claim held by a live process is
// not taken; once its heartbeat is gone, the next claim of another takes
// it at once (long before the claim's TTL), with the pending mark the
// first claim set, so the new holder looks the item up before posting.
func TestHeartbeatTakesDeadOwnersClaims(t *testing.T) {
	c, prefix := dedupetest.Redis(t)
	testHeartbeat(t, dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix}), dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix}))
}

// TestClusterHeartbeat is the same on Redis Cluster: heartbeat keys are
// per process, in slots of their own, and the claim script still touches
// one partition's slot only.
func TestClusterHeartbeat(t *testing.T) {
	c, prefix := dedupetest.Cluster(t)
	testHeartbeat(t, dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix}), dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix}))
}

func testHeartbeat(t *testing.T, a, b *dedupe.Redis) {
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	if _, err := a.OwnerHeartbeat(ctx, "host/1/a", ttl, time.Hour); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, a, "f", []dedupe.Change{change("x", "h1", dedupe.ActionPublish)}, nil, t0)
	if got := mustClaim(t, a, "host/1/a#1", 10, t0); len(got) != 1 {
		t.Fatalf("a claimed %d; want 1", len(got))
	}
	dead, err := b.OwnerHeartbeat(ctx, "host/2/b", time.Minute, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 0 {
		t.Fatalf("dead %v while a's heartbeat lives; want none", dead)
	}
	if got := mustClaim(t, b, "host/2/b#1", 10, t0); len(got) != 0 {
		t.Fatalf("b took %d items of a live process; want 0", len(got))
	}
	// a dies: its heartbeat is not refreshed and expires.
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Contains(dead, "host/1/a") {
		if time.Now().After(deadline) {
			t.Fatal("a's heartbeat never expired")
		}
		time.Sleep(50 * time.Millisecond)
		if dead, err = b.OwnerHeartbeat(ctx, "host/2/b", time.Minute, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := b.DeadOwnerItems(ctx); err != nil || n != 1 {
		t.Errorf("DeadOwnerItems = %d, %v; want 1", n, err)
	}
	got := mustClaim(t, b, "host/2/b#2", 10, t0)
	if len(got) != 1 {
		t.Fatalf("b took %d items of a dead process; want 1", len(got))
	}
	if got[0].Record.PendingHash != "h1" {
		t.Errorf("taken item's pending mark %q; want h1 (look it up before posting)", got[0].Record.PendingHash)
	}
	if n, err := b.DeadOwnerItems(ctx); err != nil || n != 0 {
		t.Errorf("DeadOwnerItems after the take = %d, %v; want 0", n, err)
	}
	// a's late outcome is refused: the claim is b's now.
	held, err := a.Settle(ctx, dedupe.Key{FeedID: "f", ExternalID: "x"}, "host/1/a#1", dedupe.Settlement{Kind: dedupe.Release}, t0)
	if err != nil || held {
		t.Errorf("a's settle after the take: held %v, %v; want refused", held, err)
	}
	// A process that leaves is no longer listed.
	if err := b.OwnerLeave(ctx, "host/2/b"); err != nil {
		t.Fatal(err)
	}
	if dead, err := a.OwnerHeartbeat(ctx, "host/3/c", time.Minute, time.Hour); err != nil || slices.Contains(dead, "host/2/b") {
		t.Errorf("dead %v, %v after b left; want b not listed", dead, err)
	}
	if dedupe.ClaimProcess("h/1/x#12") != "h/1/x" || dedupe.ClaimProcess("plain") != "plain" {
		t.Error("ClaimProcess does not strip the claim's sequence number")
	}
}
