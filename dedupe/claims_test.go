package dedupe_test

import (
	"context"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// claimOne claims the only due entry for owner with ttl.
func claimOne(t *testing.T, s dedupe.Store, owner string, ttl time.Duration, now time.Time) dedupe.Claimed {
	t.Helper()
	c, _, err := s.Claim(context.Background(), owner, 1, ttl, now)
	if err != nil || len(c) != 1 {
		t.Fatalf("Claim(%s) = %d entries, %v; want 1", owner, len(c), err)
	}
	return c[0]
}

// testNonHolderSettle: a worker whose claim lapsed, and was taken by
// another, cannot clear or overwrite the new holder's state with its late
// outcome; it may only record the content id the API gave it.
func testNonHolderSettle(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	ctx := context.Background()
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h1", dedupe.ActionPublish)}, nil, t0)
	old := claimOne(t, s, "w1", 200*time.Millisecond, t0)
	lapseWitness(t, s, 200*time.Millisecond)()
	cur := claimOne(t, s, "w2", time.Minute, t0)
	if cur.Record.PendingHash != "h1" {
		t.Fatalf("new holder sees pending %q; want h1 (w1's claim set it)", cur.Record.PendingHash)
	}
	k := old.Key
	late := []struct {
		name string
		s    dedupe.Settlement
	}{
		{"retry", dedupe.Settlement{Kind: dedupe.Retry, Next: t0.Add(time.Hour), Status: 429, Reason: "slow down"}},
		{"dead", dedupe.Settlement{Kind: dedupe.Dead, Status: 400, Reason: "bad"}},
		{"removed", dedupe.Settlement{Kind: dedupe.Removed}},
		{"release", dedupe.Settlement{Kind: dedupe.Release, Next: t0.Add(time.Hour)}},
	}
	for _, l := range late {
		held, err := s.Settle(ctx, k, "w1", l.s, t0)
		if err != nil || held {
			t.Fatalf("late %s: held %v, %v; want not held", l.name, held, err)
		}
		r := mustRecord(t, s, "f", "a")
		if r.PendingHash != "h1" || r.State != dedupe.StateActive || r.ContentID != 0 {
			t.Errorf("after late %s: record %+v; want pending h1, active, no content id", l.name, r)
		}
		if st := mustStats(t, s, t0); st != (dedupe.Stats{Outbox: 1, Due: 1}) {
			t.Errorf("after late %s: stats %+v; want the entry queued as it was", l.name, st)
		}
	}
	// The API did create content 7 for w1: that much is kept, and only that.
	if held, err := s.Settle(ctx, k, "w1", dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 7, Type: "story", Hash: "h1"}, t0); err != nil || held {
		t.Fatalf("late delivered: held %v, %v; want not held", held, err)
	}
	r := mustRecord(t, s, "f", "a")
	if r.ContentID != 7 || r.PendingHash != "h1" {
		t.Errorf("after late delivered: record %+v; want content 7 and the pending mark kept", r)
	}
	if st := mustStats(t, s, t0); st.Outbox != 1 {
		t.Errorf("after late delivered: outbox %d; want the holder's entry kept", st.Outbox)
	}
	// Nor does a second late answer overwrite a content id.
	if _, err := s.Settle(ctx, k, "w1", dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 8, Type: "story", Hash: "h1"}, t0); err != nil {
		t.Fatal(err)
	}
	if r := mustRecord(t, s, "f", "a"); r.ContentID != 7 {
		t.Errorf("content id %d after a second late answer; want 7 kept", r.ContentID)
	}
	// w2 still holds its claim and sees w1's content id before sending.
	rn, err := s.RenewClaim(ctx, k, "w2", time.Minute)
	if err != nil || !rn.Held || !rn.Known || rn.Record.ContentID != 7 {
		t.Fatalf("w2 renew = %+v, %v; want held, with content 7", rn, err)
	}
	if c, _, err := s.Claim(ctx, "w3", 5, time.Minute, t0); err != nil || len(c) != 0 {
		t.Errorf("w3 claimed %v, %v; want nothing: w2's claim stands", keys(c), err)
	}
	mustSettle(t, s, k, "w2", dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 7, Type: "story", Hash: "h1"}, t0)
	if r := mustRecord(t, s, "f", "a"); r.PendingHash != "" || r.ContentID != 7 {
		t.Errorf("after the holder's delivery: %+v; want content 7, no pending mark", r)
	}
}

// testLapsedClaimSettle: a claim that lapsed with nobody taking it over is
// not the caller's either: the entry stays due, with its pending mark.
func testLapsedClaimSettle(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	ctx := context.Background()
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h1", dedupe.ActionPublish)}, nil, t0)
	c := claimOne(t, s, "w1", 100*time.Millisecond, t0)
	lapseWitness(t, s, 100*time.Millisecond)()
	held, err := s.Settle(ctx, c.Key, "w1", dedupe.Settlement{Kind: dedupe.Retry, Next: t0.Add(time.Hour), Status: 503}, t0)
	if err != nil || held {
		t.Fatalf("Settle after the claim lapsed = %v, %v; want not held", held, err)
	}
	again := claimOne(t, s, "w2", time.Minute, t0)
	if again.Attempts != 0 || again.Record.PendingHash != "h1" {
		t.Errorf("claimed again: attempts %d, pending %q; want 0 and h1", again.Attempts, again.Record.PendingHash)
	}
}

// testRenewClaim: the check before a send extends only the holder's claim
// and shows the record as it is now.
func testRenewClaim(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	ctx := context.Background()
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h1", dedupe.ActionPublish)}, nil, t0)
	c := claimOne(t, s, "w1", 300*time.Millisecond, t0)
	firstTTL := lapseWitness(t, s, 300*time.Millisecond)
	rn, err := s.RenewClaim(ctx, c.Key, "w1", time.Minute)
	if err != nil || !rn.Held || !rn.Known || rn.Record.PendingHash != "h1" {
		t.Fatalf("RenewClaim by the holder = %+v, %v; want held, pending h1", rn, err)
	}
	if rn, err := s.RenewClaim(ctx, c.Key, "w2", time.Minute); err != nil || rn.Held || !rn.Known {
		t.Errorf("RenewClaim by another owner = %+v, %v; want not held, record known", rn, err)
	}
	// Renewed past its first TTL: nobody can claim it.
	firstTTL()
	if got, _, err := s.Claim(ctx, "w2", 5, time.Minute, t0); err != nil || len(got) != 0 {
		t.Errorf("Claim after the first TTL = %v, %v; want nothing (renewed)", keys(got), err)
	}
	// A claim that lapsed cannot be renewed, even by its old owner.
	if _, err := s.RenewClaim(ctx, c.Key, "w1", 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	lapseWitness(t, s, 100*time.Millisecond)()
	if rn, err := s.RenewClaim(ctx, c.Key, "w1", time.Minute); err != nil || rn.Held {
		t.Errorf("RenewClaim after expiry = %+v, %v; want not held", rn, err)
	}
	if rn, err := s.RenewClaim(ctx, dedupe.Key{FeedID: "f", ExternalID: "nothing"}, "w1", time.Minute); err != nil || rn.Held || rn.Known {
		t.Errorf("RenewClaim of an unknown item = %+v, %v; want not held, unknown", rn, err)
	}
	if _, err := s.RenewClaim(ctx, c.Key, "", time.Minute); err == nil {
		t.Errorf("RenewClaim without an owner succeeded")
	}
}

// testReleaseAndPending: a release moves the entry to Next without
// counting an attempt, and clears the mark its own claim set unless told
// otherwise; a claim keeps a mark already set.
func testReleaseAndPending(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	ctx := context.Background()
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h1", dedupe.ActionPublish)}, nil, t0)
	c := claimOne(t, s, "w", time.Minute, t0)
	later := t0.Add(time.Hour)
	mustSettle(t, s, c.Key, "w", dedupe.Settlement{Kind: dedupe.Release, Next: later}, t0)
	if r := mustRecord(t, s, "f", "a"); r.PendingHash != "" {
		t.Errorf("pending after a release = %q; want none (nothing was sent)", r.PendingHash)
	}
	if got, next, err := s.Claim(ctx, "w", 5, time.Minute, t0); err != nil || len(got) != 0 || !next.Equal(later) {
		t.Fatalf("Claim after release = %v, next %v, %v; want nothing before %v", keys(got), next, err, later)
	}
	c = claimOne(t, s, "w", time.Minute, later)
	if c.Attempts != 0 {
		t.Errorf("attempts after a release = %d; want 0", c.Attempts)
	}
	// An ambiguous failure keeps the mark; the feed moves on to h2; the
	// next claim keeps the earlier mark, h1.
	mustSettle(t, s, c.Key, "w", dedupe.Settlement{Kind: dedupe.Retry, Next: later, Status: 503, Ambiguous: true}, later)
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h2", dedupe.ActionPublish)}, nil, later)
	c = claimOne(t, s, "w", time.Minute, later)
	if c.Hash != "h2" || c.Record.PendingHash != "h1" {
		t.Fatalf("claimed hash %q pending %q; want h2 and h1", c.Hash, c.Record.PendingHash)
	}
	if r := mustRecord(t, s, "f", "a"); r.PendingHash != "h1" {
		t.Errorf("pending after the claim = %q; want h1 kept", r.PendingHash)
	}
	mustSettle(t, s, c.Key, "w", dedupe.Settlement{Kind: dedupe.Release, Ambiguous: true}, later)
	if r := mustRecord(t, s, "f", "a"); r.PendingHash != "h1" {
		t.Errorf("pending after an ambiguous release = %q; want h1", r.PendingHash)
	}
	if c = claimOne(t, s, "w", time.Minute, later); c.Record.PendingHash != "h1" {
		t.Errorf("pending seen after a release without Next = %q; want h1, due at once", c.Record.PendingHash)
	}
}

// testRuns: attempts that fail the same way in a row are counted, and any
// other ending restarts the count.
func testRuns(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	ctx := context.Background()
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h1", dedupe.ActionPublish)}, nil, t0)
	retry := func(run string) dedupe.Claimed {
		t.Helper()
		c := claimOne(t, s, "w", time.Minute, t0)
		mustSettle(t, s, c.Key, "w", dedupe.Settlement{Kind: dedupe.Retry, Next: t0, Status: 409, Ambiguous: true, Run: run}, t0)
		return claimOne(t, s, "w", time.Minute, t0)
	}
	check := func(c dedupe.Claimed, run string, n int) {
		t.Helper()
		if c.Run != run || c.RunLength != n {
			t.Errorf("run %q x%d; want %q x%d", c.Run, c.RunLength, run, n)
		}
		mustSettle(t, s, c.Key, "w", dedupe.Settlement{Kind: dedupe.Release, Ambiguous: true}, t0)
	}
	check(claimOne(t, s, "w", time.Minute, t0), "", 0)
	check(retry("409"), "409", 1)
	check(retry("409"), "409", 2)
	check(retry("unverified"), "unverified", 1)
	check(retry(""), "", 0)
	check(retry("409"), "409", 1)
	// A dead letter keeps its run for the listing's sake; a retry of it
	// starts afresh.
	c := claimOne(t, s, "w", time.Minute, t0)
	mustSettle(t, s, c.Key, "w", dedupe.Settlement{Kind: dedupe.Dead, Status: 409, Ambiguous: true, Run: "409"}, t0)
	if ok, err := s.RetryDeadLetter(ctx, c.Key.String(), t0); err != nil || !ok {
		t.Fatalf("RetryDeadLetter = %v, %v", ok, err)
	}
	check(claimOne(t, s, "w", time.Minute, t0), "", 0)
	check(retry("409"), "409", 1)
	c = claimOne(t, s, "w", time.Minute, t0)
	mustSettle(t, s, c.Key, "w", dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 3, Type: "story", Hash: "h1"}, t0)
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h2", dedupe.ActionPublish)}, nil, t0)
	check(claimOne(t, s, "w", time.Minute, t0), "", 0)
	if _, err := s.Settle(ctx, c.Key, "w", dedupe.Settlement{Kind: dedupe.Retry, Next: t0, Run: "a|b"}, t0); err == nil {
		t.Errorf("a run with | was accepted")
	}
}
