package dedupe_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
)

// TestRedisEpochAfterLoss: the marker is written once, read back the same
// by every later call (and every store on the same keys), and written anew
// once the keys are gone, as after a FLUSHALL.
func TestRedisEpochAfterLoss(t *testing.T) {
	t.Parallel()
	c, prefix := dedupetest.Redis(t)
	a := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
	b := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
	other := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix + "other:"})
	ctx := context.Background()
	first := mustEpoch(t, a, true)
	if got := mustEpoch(t, b, false); got != first {
		t.Errorf("second store on the same keys read %q; want %q", got, first)
	}
	if got := mustEpoch(t, other, true); got == first {
		t.Errorf("another prefix shares the marker %q", got)
	}
	if err := dedupetest.DeletePrefix(ctx, c, prefix); err != nil {
		t.Fatal(err)
	}
	if got := mustEpoch(t, b, true); got == first {
		t.Errorf("after the keys were deleted the marker is still %q; want a new one", got)
	}
}

// TestRedisEpochPartitionLost: losing one partition's marker (a wiped
// Cluster node) changes the epoch, and only that part of it: the marker is
// written anew where it is missing and read as it is elsewhere.
func TestRedisEpochPartitionLost(t *testing.T) {
	t.Parallel()
	c, prefix := dedupetest.Redis(t)
	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
	ctx := context.Background()
	first := mustEpoch(t, s, true)
	keys, err := c.Keys(ctx, prefix+"*epoch").Result()
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(first, ",")
	if len(keys) != len(parts) || len(keys) < 2 {
		t.Fatalf("%d marker keys for an epoch of %d parts; want as many, at least 2", len(keys), len(parts))
	}
	lost, err := c.Get(ctx, keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Del(ctx, keys[0]).Err(); err != nil {
		t.Fatal(err)
	}
	second := mustEpoch(t, s, true)
	var changed []string
	for i, p := range strings.Split(second, ",") {
		if p != parts[i] {
			changed = append(changed, parts[i])
		}
	}
	if len(changed) != 1 || changed[0] != lost {
		t.Errorf("after marker %s was deleted the epoch changed in %q; want in its part %q only", keys[0], changed, lost)
	}
	if got := mustEpoch(t, s, false); got != second {
		t.Errorf("epoch read again %q; want %q", got, second)
	}
}

// TestBoltEpochNewFile: a file keeps its marker across reopening; a new
// file (the old one deleted) has a new one.
func TestBoltEpochNewFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	open := func() *dedupe.Bolt {
		s, err := dedupe.OpenBolt(path, dedupe.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	first := mustEpoch(t, s, true)
	if got := mustEpoch(t, s, false); got != first {
		t.Errorf("second call read %q; want %q", got, first)
	}
	s.Close()
	s = open()
	if got := mustEpoch(t, s, false); got != first {
		t.Errorf("after reopening: %q; want %q", got, first)
	}
	s.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	s = open()
	defer s.Close()
	if got := mustEpoch(t, s, true); got == first {
		t.Errorf("a new file has the old marker %q", got)
	}
}

func mustEpoch(t *testing.T, s dedupe.Store, wantCreated bool) string {
	t.Helper()
	id, created, err := s.(dedupe.Reconciler).Epoch(context.Background())
	if err != nil {
		t.Fatalf("Epoch: %v", err)
	}
	if id == "" || created != wantCreated {
		t.Fatalf("Epoch = %q, created %v; want an id, created %v", id, created, wantCreated)
	}
	return id
}

func TestRedisRecordFound(t *testing.T) { t.Parallel(); testRecordFound(t, openRedis) }
func TestBoltRecordFound(t *testing.T)  { t.Parallel(); testRecordFound(t, openBolt) }

// testRecordFound: an unknown item becomes published (same hash: nothing
// to send; a new hash: an update); a queued item gets the content id, so
// its delivery is a PUT; an item with a content id is left alone.
func testRecordFound(t *testing.T, open opener) {
	s := open(t, dedupe.RedisOptions{})
	r := s.(dedupe.Reconciler)
	ctx := context.Background()
	// "q" is queued (a POST due), "p" published as 7.
	mustDiff(t, s, "f", items("q", "h1", "p", "h1"), nil, t0)
	mustCommit(t, s, "f", []dedupe.Change{change("q", "h1", dedupe.ActionPublish), change("p", "h1", dedupe.ActionPublish)}, nil, t0)
	cl := mustClaim(t, s, "w", 10, t0)
	for _, c := range cl {
		if c.Key.ExternalID == "p" {
			mustSettle(t, s, c.Key, "w", dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 7, Type: "story", Hash: "h1"}, t0)
		} else {
			mustSettle(t, s, c.Key, "w", dedupe.Settlement{Kind: dedupe.Release, Ambiguous: true}, t0)
		}
	}
	n, err := r.RecordFound(ctx, "f", []dedupe.Found{
		{ExternalID: "new", Hash: "h1", ContentID: 11, Type: "link"},
		{ExternalID: "q", Hash: "h1", ContentID: 12, Type: "story"},
		{ExternalID: "p", Hash: "h1", ContentID: 13, Type: "story"},
	}, t0.Add(time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("RecordFound = %d, %v; want 2 changed", n, err)
	}
	got := map[string]dedupe.Record{}
	for _, ext := range []string{"new", "q", "p"} {
		rec := mustRecord(t, s, "f", ext)
		rec.FirstSeen, rec.LastSeen, rec.LastPublished = time.Time{}, time.Time{}, time.Time{}
		got[ext] = rec
	}
	want := map[string]dedupe.Record{
		"new": {Hash: "h1", PublishedHash: "h1", ContentID: 11, Type: "link"},
		"q":   {Hash: "h1", ContentID: 12, Type: "story"},
		"p":   {Hash: "h1", PublishedHash: "h1", ContentID: 7, Type: "story"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("records (-want +got):\n%s", d)
	}
	// The found item is known to the next poll: unchanged, and a changed
	// hash queues an update of content 11.
	d := mustDiff(t, s, "f", items("new", "h1", "q", "h1", "p", "h1"), nil, t0.Add(2*time.Minute))
	if d.Dirty() || !d.Known {
		t.Errorf("Diff after RecordFound = %+v; want known, nothing new", d)
	}
	mustCommit(t, s, "f", []dedupe.Change{change("new", "h2", dedupe.ActionPublish)}, nil, t0.Add(3*time.Minute))
	cl = mustClaim(t, s, "w2", 10, t0.Add(4*time.Minute))
	byExt := map[string]dedupe.Claimed{}
	for _, c := range cl {
		byExt[c.Key.ExternalID] = c
	}
	if c, ok := byExt["new"]; !ok || c.Record.ContentID != 11 || c.Hash != "h2" {
		t.Errorf("claimed %v; want the update of new (content 11, hash h2)", keys(cl))
	}
	if c, ok := byExt["q"]; !ok || c.Record.ContentID != 12 || c.Record.PendingHash != "" {
		t.Errorf("q claimed as %+v; want content 12 and no pending mark (an update, not a look-up)", c.Record)
	}
	if _, err := r.RecordFound(ctx, "f", []dedupe.Found{{ExternalID: "x", Hash: "h"}}, t0); !errors.Is(err, dedupe.ErrInvalid) {
		t.Errorf("RecordFound without a content id: %v; want ErrInvalid", err)
	}
}
