package dedupe_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
)

// opener returns a fresh, empty store for one test.
type opener func(t *testing.T, o dedupe.RedisOptions) dedupe.Store

func openRedis(t *testing.T, o dedupe.RedisOptions) dedupe.Store {
	c, prefix := dedupetest.Redis(t)
	o.Prefix = prefix
	// The store would close the shared test client; dedupetest does.
	return dedupe.NewRedis(c, o)
}

func openBolt(t *testing.T, o dedupe.RedisOptions) dedupe.Store {
	s, err := dedupe.OpenBolt(filepath.Join(t.TempDir(), "store.db"), dedupe.BoltOptions{Retention: o.Retention, SweepLimit: o.SweepLimit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openCluster(t *testing.T, o dedupe.RedisOptions) dedupe.Store {
	c, prefix := dedupetest.Cluster(t)
	o.Prefix = prefix
	return dedupe.NewRedis(c, o)
}

func openSentinel(t *testing.T, o dedupe.RedisOptions) dedupe.Store {
	c, prefix := dedupetest.Sentinel(t)
	o.Prefix = prefix
	return dedupe.NewRedis(c, o)
}

func TestRedisContract(t *testing.T)    { testContract(t, openRedis) }
func TestClusterContract(t *testing.T)  { testContract(t, openCluster) }
func TestSentinelContract(t *testing.T) { testContract(t, openSentinel) }
func TestBoltContract(t *testing.T)     { testContract(t, openBolt) }

// testContract is the one suite both stores must pass.
func testContract(t *testing.T, open opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open opener)
	}{
		{"FirstSightDiffCommit", testFirstSight},
		{"ChangedItems", testChanged},
		{"Backfill", testBackfill},
		{"ClaimDeliver", testClaimDeliver},
		{"ClaimExclusiveAndExpiry", testClaimExpiry},
		{"ClaimRetriedBySameOwner", testClaimRetried},
		{"UpdateWhileInFlight", testInFlightUpdate},
		{"RetryAndPending", testRetry},
		{"DeadLetters", testDeadLetters},
		{"Removed", testRemoved},
		{"ForgetContent", testForgetContent},
		{"Retention", testRetention},
		{"Leases", testLeases},
		{"Invalid", testInvalid},
		{"ConcurrentClaims", testConcurrentClaims},
		{"NonHolderSettle", testNonHolderSettle},
		{"LapsedClaimSettle", testLapsedClaimSettle},
		{"RenewClaim", testRenewClaim},
		{"ReleaseAndPending", testReleaseAndPending},
		{"Runs", testRuns},
		{"FeedLeasesAndFencing", testFeedLeases},
		{"Aliases", testAliases},
		{"PollState", testPollState},
		{"Aliased", testAliased},
		{"CutFirstSight", testCutFirstSight},
		{"CutDiff", testCutDiff},
		{"CommitTail", testCommitTail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open)
		})
	}
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func items(pairs ...string) []dedupe.Item {
	var out []dedupe.Item
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, dedupe.Item{ExternalID: pairs[i], Hash: pairs[i+1]})
	}
	return out
}

func statuses(s string) []dedupe.Status {
	out := make([]dedupe.Status, len(s))
	for i := range len(s) {
		out[i] = dedupe.Status(s[i])
	}
	return out
}

func outcomes(s string) []dedupe.Outcome {
	out := make([]dedupe.Outcome, len(s))
	for i := range len(s) {
		out[i] = dedupe.Outcome(s[i])
	}
	return out
}

func change(ext, hash string, a dedupe.Action) dedupe.Change {
	return dedupe.Change{ExternalID: ext, Hash: hash, Type: "story", Action: a, Data: []byte("payload " + ext + " " + hash)}
}

func mustDiff(t *testing.T, s dedupe.Store, feed string, it []dedupe.Item, v *dedupe.Validators, now time.Time) dedupe.Diff {
	t.Helper()
	d, err := s.Diff(context.Background(), feed, it, v, now)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	return d
}

func mustCommit(t *testing.T, s dedupe.Store, feed string, ch []dedupe.Change, v *dedupe.Validators, now time.Time) []dedupe.Outcome {
	t.Helper()
	out, err := s.Commit(context.Background(), feed, ch, v, now)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return out
}

func mustRecord(t *testing.T, s dedupe.Store, feed, ext string) dedupe.Record {
	t.Helper()
	r, ok, err := s.Record(context.Background(), dedupe.Key{FeedID: feed, ExternalID: ext})
	if err != nil || !ok {
		t.Fatalf("Record(%s/%s) = ok %v, err %v; want a record", feed, ext, ok, err)
	}
	return r
}

func mustClaim(t *testing.T, s dedupe.Store, owner string, max int, now time.Time) []dedupe.Claimed {
	t.Helper()
	c, _, err := s.Claim(context.Background(), owner, max, time.Minute, now)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return c
}

// queueAndClaim commits n new items item0… of feed f and claims them all
// for owner w.
func queueAndClaim(t *testing.T, s dedupe.Store, n int) ([]dedupe.Change, []dedupe.Claimed) {
	t.Helper()
	var ch []dedupe.Change
	for i := range n {
		ch = append(ch, change(fmt.Sprint("item", i), "h1", dedupe.ActionPublish))
	}
	mustCommit(t, s, "f", ch, nil, t0)
	claimed := mustClaim(t, s, "w", n, t0)
	if len(claimed) != n {
		t.Fatalf("claimed %d, want %d", len(claimed), n)
	}
	return ch, claimed
}

func mustSettle(t *testing.T, s dedupe.Store, k dedupe.Key, owner string, st dedupe.Settlement, now time.Time) {
	t.Helper()
	held, err := s.Settle(context.Background(), k, owner, st, now)
	if err != nil {
		t.Fatalf("Settle(%s, kind %d): %v", k, st.Kind, err)
	}
	if !held {
		t.Errorf("Settle(%s) held = false; want true (claim still ours)", k)
	}
}

func mustStats(t *testing.T, s dedupe.Store, now time.Time) dedupe.Stats {
	t.Helper()
	st, err := s.Stats(context.Background(), now)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

func keys(cs []dedupe.Claimed) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Key.String())
	}
	return out
}

func testFirstSight(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	ctx := context.Background()
	v1 := &dedupe.Validators{ETag: `"e1"`, LastModified: "Mon, 02 Mar 2026 10:00:00 GMT"}

	if _, ok, err := s.Validators(ctx, "f"); err != nil || ok {
		t.Fatalf("Validators before any poll = ok %v, err %v; want none", ok, err)
	}
	d := mustDiff(t, s, "f", items("a", "h1", "b", "h2", "c", "h3"), v1, t0)
	if diff := cmp.Diff(statuses("nnn"), d.Status); diff != "" {
		t.Errorf("first Diff statuses (-want +got):\n%s", diff)
	}
	if d.Known || d.ValidatorsStored {
		t.Errorf("first Diff Known=%v ValidatorsStored=%v; want both false", d.Known, d.ValidatorsStored)
	}
	if _, ok, _ := s.Validators(ctx, "f"); ok {
		t.Errorf("validators stored although items were new; want them stored only by Commit")
	}

	got := mustCommit(t, s, "f", []dedupe.Change{
		change("a", "h1", dedupe.ActionPublish),
		change("b", "h2", dedupe.ActionSeeOnly),
		change("c", "h3", dedupe.ActionSeeOnly),
	}, v1, t0)
	if diff := cmp.Diff(outcomes("nss"), got); diff != "" {
		t.Errorf("Commit outcomes (-want +got):\n%s", diff)
	}
	if v, ok, err := s.Validators(ctx, "f"); err != nil || !ok || v != *v1 {
		t.Errorf("Validators = %+v, %v, %v; want %+v", v, ok, err, *v1)
	}
	if st := mustStats(t, s, t0); st != (dedupe.Stats{Outbox: 1, Due: 1}) {
		t.Errorf("Stats = %+v; want one due entry", st)
	}
	r := mustRecord(t, s, "f", "b")
	if r.State != dedupe.StateSeenOnly || r.Hash != "h2" || !r.FirstSeen.Equal(t0) || !r.LastSeen.Equal(t0) {
		t.Errorf("record b = %+v; want seen only, hash h2, first and last seen %v", r, t0)
	}

	// Poll 2: nothing new; one call stores the new validators.
	v2 := &dedupe.Validators{ETag: `"e2"`}
	t1 := t0.Add(time.Hour)
	d = mustDiff(t, s, "f", items("a", "h1", "b", "h2", "c", "h3"), v2, t1)
	if diff := cmp.Diff(statuses("uss"), d.Status); diff != "" {
		t.Errorf("second Diff statuses (-want +got):\n%s", diff)
	}
	if !d.Known || !d.ValidatorsStored || d.Dirty() {
		t.Errorf("second Diff = %+v; want Known, ValidatorsStored, not dirty", d)
	}
	if v, _, _ := s.Validators(ctx, "f"); v != *v2 {
		t.Errorf("Validators = %+v; want %+v", v, *v2)
	}
	if r := mustRecord(t, s, "f", "a"); !r.LastSeen.Equal(t1) || !r.FirstSeen.Equal(t0) {
		t.Errorf("record a seen first %v last %v; want %v and %v", r.FirstSeen, r.LastSeen, t0, t1)
	}

	// A feed that answered once with no items is known: its next items
	// are news, not a first sight.
	d = mustDiff(t, s, "empty", nil, &dedupe.Validators{ETag: "x"}, t0)
	if d.Known || !d.ValidatorsStored {
		t.Errorf("empty feed first Diff = %+v; want unknown, validators stored", d)
	}
	if d = mustDiff(t, s, "empty", items("z", "h"), nil, t1); !d.Known {
		t.Errorf("empty feed second Diff Known = false; want true")
	}
}

func testChanged(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	mustCommit(t, s, "f", []dedupe.Change{
		change("a", "h1", dedupe.ActionPublish),
		change("b", "h1", dedupe.ActionSeeOnly),
	}, nil, t0)

	d := mustDiff(t, s, "f", items("a", "h2", "b", "h2"), nil, t0)
	if diff := cmp.Diff(statuses("cc"), d.Status); diff != "" {
		t.Errorf("Diff statuses (-want +got):\n%s", diff)
	}
	got := mustCommit(t, s, "f", []dedupe.Change{
		change("a", "h2", dedupe.ActionPublish),
		change("b", "h2", dedupe.ActionPublish),
	}, nil, t0.Add(time.Minute))
	// a is still queued: the newer payload replaces the older one. b was
	// seen only: a change does not publish it.
	if diff := cmp.Diff(outcomes("cu"), got); diff != "" {
		t.Errorf("Commit outcomes (-want +got):\n%s", diff)
	}
	if st := mustStats(t, s, t0.Add(time.Minute)); st.Outbox != 1 {
		t.Errorf("outbox = %d; want 1 (coalesced)", st.Outbox)
	}
	c := mustClaim(t, s, "w", 10, t0.Add(time.Minute))
	if len(c) != 1 || c[0].Hash != "h2" || string(c[0].Data) != "payload a h2" {
		t.Fatalf("claimed %+v; want a with hash h2 and its newest payload", c)
	}
	if r := mustRecord(t, s, "f", "b"); r.Hash != "h2" || r.State != dedupe.StateSeenOnly {
		t.Errorf("record b = %+v; want hash h2, still seen only", r)
	}
	// Same hash again: nothing to do.
	if got := mustCommit(t, s, "f", []dedupe.Change{change("a", "h2", dedupe.ActionPublish)}, nil, t0); got[0] != dedupe.OutcomeUnchanged {
		t.Errorf("Commit of an unchanged item = %c; want u", got[0])
	}
}

func testBackfill(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	mustCommit(t, s, "f", []dedupe.Change{
		change("old", "h1", dedupe.ActionSeeOnly),
		change("pub", "h1", dedupe.ActionPublish),
	}, nil, t0)
	d := mustDiff(t, s, "f", items("old", "h1", "pub", "h1"), nil, t0)
	if diff := cmp.Diff(statuses("su"), d.Status); diff != "" {
		t.Errorf("Diff statuses (-want +got):\n%s", diff)
	}
	got := mustCommit(t, s, "f", []dedupe.Change{
		change("old", "h1", dedupe.ActionBackfill),
		change("pub", "h1", dedupe.ActionBackfill),
		change("new", "h1", dedupe.ActionBackfill),
	}, nil, t0)
	if diff := cmp.Diff(outcomes("bun"), got); diff != "" {
		t.Errorf("backfill outcomes (-want +got):\n%s", diff)
	}
	if r := mustRecord(t, s, "f", "old"); r.State != dedupe.StateActive {
		t.Errorf("backfilled record state = %c; want active", r.State)
	}
	if st := mustStats(t, s, t0); st.Outbox != 3 {
		t.Errorf("outbox = %d; want 3", st.Outbox)
	}
}

func testClaimDeliver(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h1", dedupe.ActionPublish)}, nil, t0)

	c := mustClaim(t, s, "w1", 5, t0)
	if len(c) != 1 {
		t.Fatalf("claimed %d entries; want 1", len(c))
	}
	want := dedupe.Claimed{
		Key: dedupe.Key{FeedID: "f", ExternalID: "a"}, Data: "payload a h1", Hash: "h1", Enqueued: t0,
		Record: dedupe.Record{Hash: "h1", Type: "story", FirstSeen: t0},
	}
	if diff := cmp.Diff(want, c[0]); diff != "" {
		t.Errorf("claimed (-want +got):\n%s", diff)
	}
	// Claiming marked the item pending: a POST may now reach the service.
	if r := mustRecord(t, s, "f", "a"); r.PendingHash != "h1" {
		t.Errorf("pending after claim = %q; want h1", r.PendingHash)
	}
	t1 := t0.Add(time.Second)
	mustSettle(t, s, c[0].Key, "w1", dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 42, Type: "story", Hash: "h1"}, t1)
	r := mustRecord(t, s, "f", "a")
	wantRec := dedupe.Record{Hash: "h1", PublishedHash: "h1", ContentID: 42, Type: "story", FirstSeen: t0, LastSeen: t0, LastPublished: t1}
	if diff := cmp.Diff(wantRec, r); diff != "" {
		t.Errorf("record after delivery (-want +got):\n%s", diff)
	}
	if st := mustStats(t, s, t1); st != (dedupe.Stats{}) {
		t.Errorf("Stats after delivery = %+v; want empty", st)
	}
	if c, next, err := s.Claim(context.Background(), "w1", 5, time.Minute, t1); err != nil || len(c) != 0 || !next.IsZero() {
		t.Errorf("Claim on empty outbox = %v, next %v, err %v; want nothing", c, next, err)
	}
	// An edit queues an update; claiming it does not mark it pending
	// (PUT is idempotent).
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h2", dedupe.ActionPublish)}, nil, t1)
	c = mustClaim(t, s, "w1", 5, t1)
	if len(c) != 1 || c[0].Record.ContentID != 42 || c[0].Hash != "h2" {
		t.Fatalf("claimed %+v; want the update of content 42", c)
	}
	if r := mustRecord(t, s, "f", "a"); r.PendingHash != "" {
		t.Errorf("pending on an update = %q; want none", r.PendingHash)
	}
}

// testClaimRetried: a claim call whose answer was lost (a timeout while
// the store took the items) is retried under the same owner string and
// takes them again, rather than leaving them claimed by nobody who knows
// it until the TTL; another owner still cannot.
func testClaimRetried(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h1", dedupe.ActionPublish), change("b", "h1", dedupe.ActionPublish)}, nil, t0)
	lost := mustClaim(t, s, "p#1", 5, t0)
	if len(lost) != 2 {
		t.Fatalf("first claim = %v; want both items", keys(lost))
	}
	if other := mustClaim(t, s, "p#2", 5, t0); len(other) != 0 {
		t.Fatalf("claim by another owner = %v; want nothing", keys(other))
	}
	again := mustClaim(t, s, "p#1", 5, t0)
	if len(again) != 2 {
		t.Fatalf("the same claim retried = %v; want both items again", keys(again))
	}
	for _, c := range again {
		// The pending mark the lost claim set stays: the retry looks the
		// item up before posting, in case the first holder had sent it.
		if c.Record.PendingHash != "h1" {
			t.Errorf("%s: pending hash on the retried claim = %q; want h1", c.Key, c.Record.PendingHash)
		}
		mustSettle(t, s, c.Key, "p#1", dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 1, Type: "story", Hash: "h1"}, t0)
	}
	if st := mustStats(t, s, t0); st.Outbox != 0 {
		t.Errorf("Stats after settling the retried claim = %+v; want an empty outbox", st)
	}
}

func testClaimExpiry(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	ctx := context.Background()
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h1", dedupe.ActionPublish), change("b", "h1", dedupe.ActionPublish)}, nil, t0)
	c1, _, err := s.Claim(ctx, "w1", 1, 300*time.Millisecond, t0)
	w1Lapsed := lapseWitness(t, s, 300*time.Millisecond)
	if err != nil || len(c1) != 1 {
		t.Fatalf("Claim w1 = %d, %v; want 1", len(c1), err)
	}
	c2, _, err := s.Claim(ctx, "w2", 5, time.Minute, t0)
	if err != nil || len(c2) != 1 || c2[0].Key == c1[0].Key {
		t.Fatalf("Claim w2 = %v, %v; want the other item only", keys(c2), err)
	}
	c3, next, err := s.Claim(ctx, "w3", 5, time.Minute, t0)
	if err != nil || len(c3) != 0 || !next.IsZero() {
		t.Fatalf("Claim w3 = %v, next %v, %v; want nothing (all claimed, none waiting)", keys(c3), next, err)
	}
	// w1 dies; its claim expires and w3 gets the item with the pending
	// mark w1 left, the sign that a POST may have been sent.
	w1Lapsed()
	c3, _, err = s.Claim(ctx, "w3", 5, time.Minute, t0)
	if err != nil || len(c3) != 1 || c3[0].Key != c1[0].Key {
		t.Fatalf("Claim w3 after expiry = %v, %v; want %s", keys(c3), err, c1[0].Key)
	}
	if c3[0].Record.PendingHash != "h1" {
		t.Errorf("pending hash seen by the second claimer = %q; want h1", c3[0].Record.PendingHash)
	}
	// w1 comes back late: its settle still records what the API did, but
	// it does not release w3's claim.
	held, err := s.Settle(ctx, c1[0].Key, "w1", dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 7, Type: "story", Hash: "h1"}, t0)
	if err != nil || held {
		t.Errorf("late Settle = held %v, %v; want not held", held, err)
	}
	if r := mustRecord(t, s, "f", c1[0].Key.ExternalID); r.ContentID != 7 {
		t.Errorf("content id after late settle = %d; want 7", r.ContentID)
	}
	if held, err := s.Settle(ctx, c3[0].Key, "w3", dedupe.Settlement{Kind: dedupe.Release}, t0); err != nil || !held {
		t.Errorf("w3 release = held %v, %v; want held", held, err)
	}
}

func testInFlightUpdate(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h1", dedupe.ActionPublish)}, nil, t0)
	c := mustClaim(t, s, "w", 1, t0)
	// The feed changes while h1 is being posted.
	if got := mustCommit(t, s, "f", []dedupe.Change{change("a", "h2", dedupe.ActionPublish)}, nil, t0); got[0] != dedupe.OutcomeUpdated {
		t.Fatalf("Commit while in flight = %c; want c", got[0])
	}
	t1 := t0.Add(time.Minute)
	mustSettle(t, s, c[0].Key, "w", dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 9, Type: "story", Hash: "h1"}, t1)
	c = mustClaim(t, s, "w", 1, t1)
	if len(c) != 1 || c[0].Hash != "h2" || c[0].Record.ContentID != 9 || c[0].Record.PublishedHash != "h1" {
		t.Fatalf("claimed %+v; want h2 due at once as an update of 9", c)
	}
	mustSettle(t, s, c[0].Key, "w", dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 9, Type: "story", Hash: "h2"}, t1)
	if st := mustStats(t, s, t1); st.Outbox != 0 {
		t.Errorf("outbox = %d; want 0", st.Outbox)
	}
}

func testRetry(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	ctx := context.Background()
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h1", dedupe.ActionPublish), change("b", "h1", dedupe.ActionPublish)}, nil, t0)
	c := mustClaim(t, s, "w", 2, t0)
	if len(c) != 2 {
		t.Fatalf("claimed %d; want 2", len(c))
	}
	later := t0.Add(time.Hour)
	// a: a 503 to its POST (ambiguous): the pending mark stays. b: a 429
	// (certainly not created): the mark is cleared.
	byExt := map[string]dedupe.Claimed{}
	for _, x := range c {
		byExt[x.Key.ExternalID] = x
	}
	mustSettle(t, s, byExt["a"].Key, "w", dedupe.Settlement{Kind: dedupe.Retry, Next: later, Status: 503, Reason: "unavailable", Ambiguous: true}, t0)
	mustSettle(t, s, byExt["b"].Key, "w", dedupe.Settlement{Kind: dedupe.Retry, Next: later.Add(time.Minute), Status: 429, Reason: "slow down"}, t0)

	got, next, err := s.Claim(ctx, "w", 5, time.Minute, t0.Add(time.Minute))
	if err != nil || len(got) != 0 || !next.Equal(later) {
		t.Fatalf("Claim before due = %v, next %v, %v; want nothing, next %v", keys(got), next, err, later)
	}
	if st := mustStats(t, s, t0); st != (dedupe.Stats{Outbox: 2}) {
		t.Errorf("Stats = %+v; want 2 queued, none due", st)
	}
	got = mustClaim(t, s, "w", 5, later.Add(time.Hour))
	if diff := cmp.Diff([]string{"f/a", "f/b"}, keys(got)); diff != "" {
		t.Fatalf("claimed in due order (-want +got):\n%s", diff)
	}
	if got[0].Attempts != 1 || got[0].Record.PendingHash != "h1" {
		t.Errorf("a: attempts %d pending %q; want 1 and h1", got[0].Attempts, got[0].Record.PendingHash)
	}
	if got[1].Attempts != 1 || got[1].Record.PendingHash != "" {
		t.Errorf("b: attempts %d pending %q; want 1 and none", got[1].Attempts, got[1].Record.PendingHash)
	}
}

func testDeadLetters(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	ctx := context.Background()
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h1", dedupe.ActionPublish), change("b", "h1", dedupe.ActionPublish)}, nil, t0)
	c := mustClaim(t, s, "w", 2, t0)
	t1 := t0.Add(time.Second)
	for i, x := range c {
		mustSettle(t, s, x.Key, "w", dedupe.Settlement{Kind: dedupe.Dead, Status: 400, Reason: fmt.Sprintf("title: too\nlong %d", i)}, t1.Add(time.Duration(i)*time.Second))
	}
	dl, err := s.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []dedupe.DeadLetter{
		{ID: "f/a", Key: dedupe.Key{FeedID: "f", ExternalID: "a"}, Data: []byte("payload a h1"), Hash: "h1", Attempts: 1, Status: 400, Reason: "title: too long 0", At: t1, Enqueued: t0},
		{ID: "f/b", Key: dedupe.Key{FeedID: "f", ExternalID: "b"}, Data: []byte("payload b h1"), Hash: "h1", Attempts: 1, Status: 400, Reason: "title: too long 1", At: t1.Add(time.Second), Enqueued: t0},
	}
	if diff := cmp.Diff(want, dl); diff != "" {
		t.Errorf("DeadLetters (-want +got):\n%s", diff)
	}
	if r := mustRecord(t, s, "f", "a"); r.State != dedupe.StateDead || r.PendingHash != "" {
		t.Errorf("record = %+v; want dead, not pending", r)
	}
	if st := mustStats(t, s, t1); st != (dedupe.Stats{DeadLetters: 2}) {
		t.Errorf("Stats = %+v; want 2 dead letters only", st)
	}
	if ok, err := s.RetryDeadLetter(ctx, "f/nope", t1); err != nil || ok {
		t.Errorf("RetryDeadLetter(unknown) = %v, %v; want false", ok, err)
	}
	if ok, err := s.RetryDeadLetter(ctx, "f/a", t1); err != nil || !ok {
		t.Fatalf("RetryDeadLetter(f/a) = %v, %v; want true", ok, err)
	}
	got := mustClaim(t, s, "w", 5, t1)
	if len(got) != 1 || got[0].Key.ExternalID != "a" || got[0].Attempts != 0 {
		t.Fatalf("claimed after retry %+v; want a with attempts reset", got)
	}
	if r := mustRecord(t, s, "f", "a"); r.State != dedupe.StateActive {
		t.Errorf("state after retry = %c; want active", r.State)
	}
	// An edit of a dead item gives it another chance: the source may have
	// fixed what the API rejected.
	if out := mustCommit(t, s, "f", []dedupe.Change{change("b", "h2", dedupe.ActionPublish)}, nil, t1); out[0] != dedupe.OutcomeUpdated {
		t.Errorf("Commit of an edited dead item = %c; want c", out[0])
	}
	if st := mustStats(t, s, t1); st != (dedupe.Stats{Outbox: 2, Due: 2}) {
		t.Errorf("Stats = %+v; want 2 queued (a claimed, b re-queued), no dead letters", st)
	}
	// Retry all.
	// Another claim call: another owner ("w" still holds a).
	got = mustClaim(t, s, "w2", 5, t1)
	for _, x := range got {
		mustSettle(t, s, x.Key, "w2", dedupe.Settlement{Kind: dedupe.Dead, Status: 403, Reason: "forbidden"}, t1)
	}
	mustSettle(t, s, dedupe.Key{FeedID: "f", ExternalID: "a"}, "w", dedupe.Settlement{Kind: dedupe.Dead, Status: 403, Reason: "forbidden"}, t1)
	if n, err := s.RetryDeadLetters(ctx, t1); err != nil || n != 2 {
		t.Errorf("RetryDeadLetters = %d, %v; want 2", n, err)
	}
	if st := mustStats(t, s, t1); st != (dedupe.Stats{Outbox: 2, Due: 2}) {
		t.Errorf("Stats after retry all = %+v; want 2 due", st)
	}
}

func testRemoved(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h1", dedupe.ActionPublish)}, nil, t0)
	c := mustClaim(t, s, "w", 1, t0)
	mustSettle(t, s, c[0].Key, "w", dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 5, Type: "story", Hash: "h1"}, t0)
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h2", dedupe.ActionPublish)}, nil, t0)
	c = mustClaim(t, s, "w", 1, t0)
	mustSettle(t, s, c[0].Key, "w", dedupe.Settlement{Kind: dedupe.Removed}, t0)
	if r := mustRecord(t, s, "f", "a"); r.State != dedupe.StateRemoved || r.ContentID != 5 {
		t.Errorf("record = %+v; want removed, content id kept", r)
	}
	if st := mustStats(t, s, t0); st != (dedupe.Stats{}) {
		t.Errorf("Stats = %+v; want empty", st)
	}
	// Left alone, even when the source edits it again.
	if out := mustCommit(t, s, "f", []dedupe.Change{change("a", "h3", dedupe.ActionPublish)}, nil, t0); out[0] != dedupe.OutcomeUnchanged {
		t.Errorf("Commit of an edited removed item = %c; want u", out[0])
	}
	if st := mustStats(t, s, t0); st.Outbox != 0 {
		t.Errorf("outbox = %d; want 0", st.Outbox)
	}
}

// testAliased: an item settled as another item's story leaves the outbox,
// is seen only, without a content id, and its later changes are not
// queued.
func testAliased(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h1", dedupe.ActionPublish)}, nil, t0)
	c := mustClaim(t, s, "w", 1, t0)
	if c[0].Record.PendingHash != "" {
		t.Fatalf("claimed %+v", c[0])
	}
	mustSettle(t, s, c[0].Key, "w", dedupe.Settlement{Kind: dedupe.Aliased}, t0)
	if r := mustRecord(t, s, "f", "a"); r.State != dedupe.StateSeenOnly || r.ContentID != 0 || r.PendingHash != "" {
		t.Errorf("record = %+v; want seen only, no content id, no pending mark", r)
	}
	if st := mustStats(t, s, t0); st != (dedupe.Stats{}) {
		t.Errorf("Stats = %+v; want empty", st)
	}
	if out := mustCommit(t, s, "f", []dedupe.Change{change("a", "h2", dedupe.ActionPublish)}, nil, t0); out[0] != dedupe.OutcomeUnchanged {
		t.Errorf("Commit of an edited aliased item = %c; want u", out[0])
	}
	if st := mustStats(t, s, t0); st.Outbox != 0 {
		t.Errorf("outbox = %d; want 0", st.Outbox)
	}
}

func testForgetContent(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h1", dedupe.ActionPublish)}, nil, t0)
	c := mustClaim(t, s, "w", 1, t0)
	mustSettle(t, s, c[0].Key, "w", dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 5, Type: "story", Hash: "h1"}, t0)
	mustCommit(t, s, "f", []dedupe.Change{change("a", "h2", dedupe.ActionPublish)}, nil, t0)
	c = mustClaim(t, s, "w", 1, t0)
	mustSettle(t, s, c[0].Key, "w", dedupe.Settlement{Kind: dedupe.Retry, Next: t0, Status: 404, ForgetContent: true}, t0)
	c = mustClaim(t, s, "w", 1, t0)
	if len(c) != 1 || c[0].Record.ContentID != 0 || c[0].Hash != "h2" {
		t.Fatalf("claimed %+v; want a to be created again", c)
	}
	if r := mustRecord(t, s, "f", "a"); r.PendingHash != "h2" {
		t.Errorf("pending = %q; want h2 (a POST follows)", r.PendingHash)
	}
}

func testRetention(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{Retention: 90 * 24 * time.Hour})
	day := 24 * time.Hour
	mustCommit(t, s, "f", []dedupe.Change{
		change("gone", "h", dedupe.ActionSeeOnly),
		change("stays", "h", dedupe.ActionSeeOnly),
		change("queued", "h", dedupe.ActionPublish),
	}, nil, t0)

	// 100 days of 304s: nothing refreshed, nothing forgotten either.
	t1 := t0.Add(100 * day)
	d := mustDiff(t, s, "f", items("stays", "h"), nil, t1)
	if d.Status[0] != dedupe.StatusSkipped || d.Expired != 1 {
		t.Errorf("Diff after 100 days = %+v; want stays known, one expired", d)
	}
	if _, ok, _ := s.Record(context.Background(), dedupe.Key{FeedID: "f", ExternalID: "gone"}); ok {
		t.Errorf("item gone for 100 days still has a record")
	}
	// An item with undelivered work is kept.
	if r := mustRecord(t, s, "f", "queued"); !r.LastSeen.Equal(t1) {
		t.Errorf("queued item last seen %v; want refreshed to %v", r.LastSeen, t1)
	}
	// "gone" comes back: new again (the retention is what bounds memory).
	if d := mustDiff(t, s, "f", items("gone", "h", "stays", "h"), nil, t1.Add(day)); d.Status[0] != dedupe.StatusNew || d.Status[1] != dedupe.StatusSkipped {
		t.Errorf("Diff = %+v; want gone new, stays skipped", d.Status)
	}
}

func testLeases(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	ctx := context.Background()
	check := func(what string, got bool, err error, want bool) {
		t.Helper()
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", what, got, err, want)
		}
	}
	ok, err := s.AcquireLease(ctx, "feed1", "a", time.Minute)
	check("a acquires", ok, err, true)
	ok, err = s.AcquireLease(ctx, "feed1", "b", time.Minute)
	check("b acquires a's lease", ok, err, false)
	ok, err = s.AcquireLease(ctx, "feed1", "a", time.Minute)
	check("a acquires again (extends)", ok, err, true)
	ok, err = s.RenewLease(ctx, "feed1", "b", time.Minute)
	check("b renews a's lease", ok, err, false)
	if err := s.ReleaseLease(ctx, "feed1", "b"); err != nil {
		t.Fatal(err)
	}
	ok, err = s.AcquireLease(ctx, "feed1", "b", time.Minute)
	check("b acquires after its own no-op release", ok, err, false)
	if err := s.ReleaseLease(ctx, "feed1", "a"); err != nil {
		t.Fatal(err)
	}
	ok, err = s.AcquireLease(ctx, "feed1", "b", 200*time.Millisecond)
	check("b acquires after a released", ok, err, true)
	ok, err = s.RenewLease(ctx, "feed1", "b", 200*time.Millisecond)
	check("b renews", ok, err, true)
	lapseWitness(t, s, 200*time.Millisecond)()
	ok, err = s.RenewLease(ctx, "feed1", "b", time.Minute)
	check("b renews after expiry", ok, err, false)
	ok, err = s.AcquireLease(ctx, "feed1", "a", time.Minute)
	check("a acquires an expired lease", ok, err, true)
}

func testInvalid(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	ctx := context.Background()
	for name, err := range map[string]error{
		"feed with slash": func() error { _, err := s.Diff(ctx, "a/b", items("x", "h"), nil, t0); return err }(),
		"empty external":  func() error { _, err := s.Diff(ctx, "f", items("", "h"), nil, t0); return err }(),
		"hash with bar": func() error {
			_, err := s.Commit(ctx, "f", []dedupe.Change{change("x", "h|1", dedupe.ActionPublish)}, nil, t0)
			return err
		}(),
		"unknown action": func() error {
			_, err := s.Commit(ctx, "f", []dedupe.Change{change("x", "h", 'z')}, nil, t0)
			return err
		}(),
		"retry no time": func() error {
			_, err := s.Settle(ctx, dedupe.Key{FeedID: "f", ExternalID: "x"}, "w", dedupe.Settlement{Kind: dedupe.Retry}, t0)
			return err
		}(),
		"bad dead id": func() error { _, err := s.RetryDeadLetter(ctx, "nofeed", t0); return err }(),
	} {
		if !errors.Is(err, dedupe.ErrInvalid) {
			t.Errorf("%s: err = %v; want ErrInvalid", name, err)
		}
	}
}

func testConcurrentClaims(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	const n = 40
	var ch []dedupe.Change
	for i := range n {
		ch = append(ch, change(fmt.Sprintf("i%02d", i), "h", dedupe.ActionPublish))
	}
	mustCommit(t, s, "f", ch, nil, t0)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			owner := fmt.Sprintf("w%d", w)
			for {
				c, _, err := s.Claim(context.Background(), owner, 3, time.Minute, t0)
				if err != nil {
					t.Errorf("Claim: %v", err)
					return
				}
				if len(c) == 0 {
					return
				}
				for _, x := range c {
					mu.Lock()
					seen[x.Key.ExternalID]++
					mu.Unlock()
					if _, err := s.Settle(context.Background(), x.Key, owner, dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 1, Type: "story", Hash: "h"}, t0); err != nil {
						t.Errorf("Settle: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("delivered %d distinct items; want %d", len(seen), n)
	}
	for k, v := range seen {
		if v != 1 {
			t.Errorf("%s claimed %d times; want once", k, v)
		}
	}
}
