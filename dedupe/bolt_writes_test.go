package dedupe

import (
	"path/filepath"
	"testing"
	"time"
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
