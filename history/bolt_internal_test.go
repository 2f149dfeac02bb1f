package history

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

// TestRecordMergeFailsOnADigestThatDoesNotDecode: an update bringing a
// different digest to a record whose kept digest does not decode fails,
// rather than reading it as none (which would name every field changed),
// and leaves the record as it was. The scanner that keeps a digest checks it
// decodes, so this is the guard against the two parting ways.
func TestRecordMergeFailsOnADigestThatDoesNotDecode(t *testing.T) {
	bad := []byte(`{"title":`)
	r := record{it: &Item{ID: "x1", Events: []Event{{Kind: Queued, At: 1}}}, dg: bad}
	var d Digest
	d.Set(FieldTitle, 7)
	err := r.merge(Update{ID: "x1", Seen: true, Digest: d, Event: Event{Kind: Changed, At: 2}}, MaxEvents)
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		t.Fatalf("merge = %v, want a *json.SyntaxError", err)
	}
	if string(r.dg) != string(bad) || r.it.Digest != nil || len(r.it.Events) != 1 {
		t.Errorf("record changed by a failed merge: dg %q, digest %v, events %+v", r.dg, r.it.Digest, r.it.Events)
	}
}

// TestBoltWriteFailsWholeOnAnUnreadableRecord: a stored record that does not
// read fails the write with an error naming its feed and item, and the
// write's one transaction leaves nothing of the flush behind: not the other
// feed's records, not the bad feed's polls, not the hours.
func TestBoltWriteFailsWholeOnAnUnreadableRecord(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "h.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := NewBolt(db, Limits{})
	ctx := t.Context()
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	var d1, d2 Digest
	d1.Set(FieldTitle, 1)
	d2.Set(FieldTitle, 2)
	first := []Batch{
		{Feed: "a", Items: []Update{{ID: "a1", Seen: true, Digest: d1, Event: Event{Kind: Queued, At: 1}}}},
		{Feed: "b", Items: []Update{{ID: "b1", Seen: true, Digest: d1, Event: Event{Kind: Queued, At: 1}}}},
	}
	if err := s.Write(ctx, first, nil, -1, t0); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return feedBucket(tx, "b").Bucket(bHItems).Put([]byte("b1"), []byte(`{"id":"b1","dg":{"title":`))
	}); err != nil {
		t.Fatal(err)
	}
	before := dump(t, db)

	second := []Batch{
		{Feed: "a", Items: []Update{
			{ID: "a1", Seen: true, Digest: d2, Event: Event{Kind: Changed, At: 2}},
			{ID: "a2", Seen: true, Digest: d1, Event: Event{Kind: Queued, At: 2}},
		}},
		{Feed: "b", Polls: []Poll{{At: 2, Result: "ok"}}, Items: []Update{{ID: "b1", Seen: true, Digest: d2, Event: Event{Kind: Changed, At: 2}}}},
		{Feed: "c", Items: []Update{{ID: "c1", Seen: true, Digest: d1, Event: Event{Kind: Queued, At: 2}}}},
	}
	hours := map[int64]Hour{hourOf(t0): {Start: hourOf(t0), Published: 1, Outbox: -1}}
	err = s.Write(ctx, second, hours, 3, t0)
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		t.Fatalf("Write = %v, want a *json.SyntaxError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "feed b:") || !strings.Contains(msg, "item b1:") {
		t.Errorf("Write error %q names not feed b and item b1", msg)
	}
	if diff := cmp.Diff(before, dump(t, db)); diff != "" {
		t.Errorf("a failed write left part of its flush (-before +after):\n%s", diff)
	}
}

// dump is every key and value under the history bucket, by path.
func dump(t *testing.T, db *bolt.DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(path string, b *bolt.Bucket) error
	walk = func(path string, b *bolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			p := path + "/" + string(k)
			if v == nil {
				return walk(p, b.Bucket(k))
			}
			out[p] = string(v)
			return nil
		})
	}
	if err := db.View(func(tx *bolt.Tx) error { return walk("", tx.Bucket(bHistory)) }); err != nil {
		t.Fatal(err)
	}
	return out
}
