package dedupe_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// testFeedLeases is the fencing contract: a new holding of a feed's lease
// gets a greater token, and a holder whose lease passed on can store
// nothing for the feed any more.
func testFeedLeases(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	fl, ok := s.(dedupe.FeedLeaser)
	if !ok {
		t.Fatalf("%T does not implement FeedLeaser", s)
	}
	ctx := context.Background()
	feeds := []string{"f1", "f2", "f3"}
	ta, err := fl.AcquireFeedLeases(ctx, feeds, "a", 300*time.Millisecond)
	if err != nil || ta[0] == 0 || ta[1] == 0 || ta[2] == 0 {
		t.Fatalf("a acquires free leases = %v, %v; want three tokens", ta, err)
	}
	if tb, err := fl.AcquireFeedLeases(ctx, feeds[:1], "b", time.Minute); err != nil || tb[0] != 0 {
		t.Fatalf("b acquires a's lease = %v, %v; want 0", tb, err)
	}
	if again, err := fl.AcquireFeedLeases(ctx, feeds[:1], "a", 300*time.Millisecond); err != nil || again[0] != ta[0] {
		t.Errorf("a extends its lease = %v, %v; want the same token %d", again, err, ta[0])
	}
	// A first sight under a fence is still a first sight.
	v := &dedupe.Validators{ETag: "e", Fence: ta[0]}
	if d := mustDiff(t, s, "f1", items("x", "h"), v, t0); d.Known {
		t.Errorf("diff of a never-polled feed under a fence = %+v; want Known false", d)
	}
	mustCommit(t, s, "f1", []dedupe.Change{change("x", "h", dedupe.ActionPublish)}, v, t0)

	// a pauses past its lease; b takes the feed.
	waitUntil(t, func() bool {
		tb, err := fl.AcquireFeedLeases(ctx, feeds[:1], "b", time.Minute)
		return err == nil && tb[0] != 0
	})
	tb, _ := fl.AcquireFeedLeases(ctx, feeds[:1], "b", time.Minute)
	if tb[0] <= ta[0] {
		t.Errorf("b's token %d; want more than a's %d", tb[0], ta[0])
	}
	if ok, err := fl.RenewFeedLeases(ctx, feeds[:1], "a", time.Minute); err != nil || ok[0] {
		t.Errorf("a renews a lease b holds = %v, %v; want false", ok, err)
	}
	stale := &dedupe.Validators{ETag: "stale", Fence: ta[0]}
	if _, err := s.Commit(ctx, "f1", []dedupe.Change{change("x", "h-old", dedupe.ActionPublish), change("y", "h", dedupe.ActionPublish)}, stale, t0); !errors.Is(err, dedupe.ErrFenced) {
		t.Errorf("commit under a's stale token = %v; want ErrFenced", err)
	}
	if _, err := s.Diff(ctx, "f1", items("x", "h"), stale, t0); !errors.Is(err, dedupe.ErrFenced) {
		t.Errorf("diff under a's stale token = %v; want ErrFenced", err)
	}
	if r := mustRecord(t, s, "f1", "x"); r.Hash != "h" {
		t.Errorf("record of x after the refused commit has hash %q; want h", r.Hash)
	}
	if _, ok, _ := s.Record(ctx, dedupe.Key{FeedID: "f1", ExternalID: "y"}); ok {
		t.Error("the refused commit recorded y")
	}
	if got, _, _ := s.Validators(ctx, "f1"); got.ETag != "e" {
		t.Errorf("validators after the refused commit = %+v; want etag e", got)
	}
	mustCommit(t, s, "f1", []dedupe.Change{change("y", "h", dedupe.ActionPublish)}, &dedupe.Validators{ETag: "e2", Fence: tb[0]}, t0)

	if err := fl.ReleaseFeedLeases(ctx, feeds[:1], "a"); err != nil {
		t.Fatal(err)
	}
	if tc, _ := fl.AcquireFeedLeases(ctx, feeds[:1], "c", time.Minute); tc[0] != 0 {
		t.Error("a's release of b's lease freed it")
	}
	if err := fl.ReleaseFeedLeases(ctx, feeds[:1], "b"); err != nil {
		t.Fatal(err)
	}
	if tc, _ := fl.AcquireFeedLeases(ctx, feeds[:1], "c", time.Minute); tc[0] <= tb[0] {
		t.Errorf("c's token after b released = %d; want more than %d", tc[0], tb[0])
	}
}

// waitUntil polls cond for up to 10s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
