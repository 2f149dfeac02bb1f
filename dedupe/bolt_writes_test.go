package dedupe

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// pagesWritten is how many pages the store's commits have made so far.
func pagesWritten(b *Bolt) int64 {
	s := b.db.Stats()
	return s.TxStats.GetPageCount()
}

// writes is how many writes to the file the store's commits have made so
// far: every commit writes at least its meta page.
func writes(b *Bolt) int64 {
	s := b.db.Stats()
	return s.TxStats.GetWrite()
}

// TestBoltWritesOnlyWhatChanged: the calls a first poll makes that change
// nothing on disk (the epoch marker already there, the Diff of a feed
// never seen, aliases put as they were just reserved) commit no pages.
func TestBoltWritesOnlyWhatChanged(t *testing.T) {
	b, err := OpenBolt(filepath.Join(t.TempDir(), "store.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	id, created, err := b.Epoch(ctx)
	if err != nil || !created {
		t.Fatalf("first Epoch = %q, created %v, %v; want a new marker", id, created, err)
	}

	before := writes(b)
	again, created, err := b.Epoch(ctx)
	if err != nil || created || again != id {
		t.Fatalf("second Epoch = %q, created %v, %v; want %q, not created", again, created, err, id)
	}
	if got := writes(b) - before; got != 0 {
		t.Errorf("Epoch of a file with its marker wrote %d times, want 0", got)
	}

	before = writes(b)
	d, err := b.Diff(ctx, "f1", []Item{{ExternalID: "a", Hash: "h1"}, {ExternalID: "b", Hash: "h2"}}, &Validators{ETag: "e"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if d.Known || d.ValidatorsStored || d.Expired != 0 || len(d.Status) != 2 || d.Status[0] != StatusNew || d.Status[1] != StatusNew {
		t.Errorf("Diff of an unknown feed = %+v; want unknown, both new, nothing stored", d)
	}
	if got := writes(b) - before; got != 0 {
		t.Errorf("Diff of an unknown feed wrote %d times, want 0", got)
	}

	as := []Alias{
		{AliasFP: AliasFP{FP: "u1"}, Target: Key{"f1", "a"}, Type: "story", Extra: "title one"},
		{AliasFP: AliasFP{FP: "u2"}, Target: Key{"f1", "b"}, Type: "story", Extra: "title two"},
	}
	if _, err := b.ReserveAliases(ctx, as, now); err != nil {
		t.Fatal(err)
	}
	// The reservations are logged by the next commit (bolt_aliaslog.go):
	// an empty write, so that the put below is measured alone.
	if err := b.update(ctx, "log", func(*bolt.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	before = pagesWritten(b)
	if err := b.PutAliases(ctx, as, now); err != nil {
		t.Fatal(err)
	}
	if got := pagesWritten(b) - before; got != 0 {
		t.Errorf("PutAliases of aliases just reserved wrote %d pages, want 0", got)
	}
	got, err := b.LookupAliases(ctx, []AliasFP{as[0].AliasFP, as[1].AliasFP}, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range got {
		if !a.Found || a.Target != as[i].Target || !a.Since.Equal(now) {
			t.Errorf("alias %s after the put = %+v; want found for %s since %v", as[i].FP, a, as[i].Target, now)
		}
	}
	// A put that does change an alias (a later time) still writes.
	before = pagesWritten(b)
	if err := b.PutAliases(ctx, as, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if pagesWritten(b) == before {
		t.Error("PutAliases renewing aliases wrote no pages")
	}
}

// TestBoltCommitAliases: CommitAliases records what Commit records and the
// aliases as PutAliases does; an invalid alias fails it before anything
// is written.
func TestBoltCommitAliases(t *testing.T) {
	b, err := OpenBolt(filepath.Join(t.TempDir(), "store.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	changes := []Change{{ExternalID: "a", Hash: "h1", Type: "story", Action: ActionPublish, Data: []byte(`{"a":1}`)}}
	as := []Alias{
		{AliasFP: AliasFP{FeedID: "f1", FP: "u1"}, Target: Key{"f1", "a"}, Type: "story", Extra: "t"},
		{AliasFP: AliasFP{FP: "u1"}, Target: Key{"f1", "a"}, Type: "story", Extra: "t", TTL: time.Hour},
	}

	bad := append([]Alias{{AliasFP: AliasFP{FP: "x|y"}, Target: Key{"f2", "a"}, Type: "story"}}, as...)
	if _, err := b.CommitAliases(ctx, "f2", changes, &Validators{ETag: "e"}, bad, nil, now); !errors.Is(err, ErrInvalid) {
		t.Errorf("CommitAliases with an invalid alias: %v, want ErrInvalid", err)
	}
	if _, ok, err := b.Record(ctx, Key{"f2", "a"}); err != nil || ok {
		t.Errorf("record after a refused CommitAliases: found %v, %v; want none", ok, err)
	}

	out, err := b.CommitAliases(ctx, "f1", changes, &Validators{ETag: "e"}, as, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0] != OutcomeNew {
		t.Errorf("CommitAliases outcomes = %v, want [%v]", out, OutcomeNew)
	}
	if v, ok, err := b.Validators(ctx, "f1"); err != nil || !ok || v.ETag != "e" {
		t.Errorf("validators after CommitAliases = %+v, %v, %v; want etag e", v, ok, err)
	}
	if st, err := b.Stats(ctx, now); err != nil || st.Outbox != 1 {
		t.Errorf("outbox after CommitAliases = %+v, %v; want 1 entry", st, err)
	}
	got, err := b.LookupAliases(ctx, []AliasFP{as[0].AliasFP, as[1].AliasFP}, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range got {
		if !a.Found || a.Target != as[i].Target || a.Extra != "t" {
			t.Errorf("alias %+v after CommitAliases = %+v; want found for %s", as[i].AliasFP, a, as[i].Target)
		}
	}
	// Each alias lives for its own TTL, as with PutAliases.
	got, err = b.LookupAliases(ctx, []AliasFP{as[0].AliasFP, as[1].AliasFP}, now.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Found || got[1].Found {
		t.Errorf("aliases two hours later: found %v, %v; want the feed's (store retention) only", got[0].Found, got[1].Found)
	}
}
