package dedupe

import (
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// crash closes the file as a killed process leaves it: the writes
// committed are there, nothing else is (no merge of the overlay).
func crash(t *testing.T, b *Bolt) {
	t.Helper()
	b.group.close()
	if err := b.db.Close(); err != nil {
		t.Fatal(err)
	}
}

// crashAndReopen crashes b and opens the file at path again, closed at
// the test's end.
func crashAndReopen(t *testing.T, b *Bolt, path string) *Bolt {
	t.Helper()
	crash(t, b)
	b, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// commitCrashReopen makes one empty commit (it logs what waits in
// memory), then crashes b and opens the file at path again.
func commitCrashReopen(t *testing.T, b *Bolt, path string) *Bolt {
	t.Helper()
	if err := b.update(t.Context(), "empty", func(*bolt.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return crashAndReopen(t, b, path)
}

// logRecords counts the alias log's records in the file at path.
func logRecords(t *testing.T, path string) int {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	err = db.View(func(tx *bolt.Tx) error {
		if lb := tx.Bucket(bAliasLog); lb != nil {
			n = lb.Stats().KeyN
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func acrossAlias(fp, feed, ext string) Alias {
	return Alias{AliasFP: AliasFP{FP: fp}, Target: Key{feed, ext}, Type: "story", Extra: "a title"}
}

// TestBoltReservationDurableWithNextCommit: a reservation, kept in memory,
// is durable with the next commit of any write, here another feed's
// commit (a merge job made by it would be one); after a crash the next
// open finds it, with its time, and it still wins against a later one.
func TestBoltReservationDurableWithNextCommit(t *testing.T) {
	b, path := openFileBolt(t)
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	held, err := b.ReserveAliases(ctx, []Alias{acrossAlias("u:1", "f1", "a"), acrossAlias("g:1", "f1", "a")}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range held {
		if h.Target != (Key{"f1", "a"}) {
			t.Fatalf("first reservation held by %v", h.Target)
		}
	}
	if _, err := b.Commit(ctx, "f2", []Change{{ExternalID: "x", Hash: "h", Type: "story", Action: ActionPublish, Data: []byte(`{"a":1}`)}}, &Validators{ETag: "e"}, now); err != nil {
		t.Fatal(err)
	}
	crash(t, b)
	if n := logRecords(t, path); n == 0 {
		t.Fatal("no alias log record after a commit that followed a reservation")
	}

	b, err = OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := b.LookupAliases(ctx, []AliasFP{{FP: "u:1"}, {FP: "g:1"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range got {
		if !g.Found || g.Target != (Key{"f1", "a"}) || !g.Since.Equal(now) {
			t.Errorf("after the crash, %s = %+v; want held by f1/a since %v", g.FP, g, now)
		}
	}
	later, err := b.ReserveAliases(ctx, []Alias{acrossAlias("u:1", "f3", "b")}, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if later[0].Target != (Key{"f1", "a"}) || !later[0].Since.Equal(now) {
		t.Errorf("a later reservation by f3/b got %+v; want f1/a's, since %v", later[0], now)
	}
}

// TestBoltAliasMerge: once mergeAt aliases wait, the next reservation
// merges them into the bucket and empties the log; every alias is found
// as before, and a later reservation of another target still loses to
// the merged one. Close merges what waits, so the file holds no log.
func TestBoltAliasMerge(t *testing.T) {
	b, path := openFileBolt(t)
	b.mergeAt = 10
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	var fps []AliasFP
	for i := range 12 {
		a := acrossAlias(fmt.Sprintf("u:%02d", i), "f1", fmt.Sprintf("e%02d", i))
		fps = append(fps, a.AliasFP)
		if _, err := b.ReserveAliases(ctx, []Alias{a}, now); err != nil {
			t.Fatal(err)
		}
		// A commit after each, as fetches commit: a log record each.
		if err := b.update(ctx, "log", func(*bolt.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	b.aliases.mu.Lock()
	waiting := len(b.aliases.m)
	b.aliases.mu.Unlock()
	if waiting >= 10 {
		t.Errorf("%d aliases in memory after 12 reservations with a merge at 10", waiting)
	}
	got, err := b.LookupAliases(ctx, fps, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if want := (Key{"f1", fmt.Sprintf("e%02d", i)}); !g.Found || g.Target != want || !g.Since.Equal(now) {
			t.Errorf("%s after the merge = %+v; want %v since %v", fps[i].FP, g, want, now)
		}
	}
	lost, err := b.ReserveAliases(ctx, []Alias{acrossAlias("u:00", "f9", "z")}, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if lost[0].Target != (Key{"f1", "e00"}) {
		t.Errorf("a reservation of a merged alias by another target got %v; want f1/e00", lost[0].Target)
	}
	// Reserved and not logged before Close: Close's merge has it, and
	// its transaction logs nothing of what it merges.
	last := acrossAlias("u:last", "f1", "last")
	if _, err := b.ReserveAliases(ctx, []Alias{last}, now); err != nil {
		t.Fatal(err)
	}
	fps = append(fps, last.AliasFP)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n := logRecords(t, path); n != 0 {
		t.Errorf("%d alias log records after Close; want none (merged)", n)
	}
	b, err = OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err = b.LookupAliases(ctx, fps, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if !g.Found {
			t.Errorf("%s not found after Close and open", fps[i].FP)
		}
	}
}

// TestBoltAliasLogInParts: a commit logging more than logPartBytes writes
// its record in parts of whole entries, each at most one entry past the
// bound; a crash replays all of them, and in order: a value staged by
// the commit, logged after the reservation of the same key, is the one
// found.
func TestBoltAliasLogInParts(t *testing.T) {
	b, path := openFileBolt(t)
	var err error
	ctx, now := t.Context(), time.UnixMilli(1_700_000_000_000)
	var as []Alias
	for i := range 100 {
		as = append(as, acrossAlias(fmt.Sprintf("u:%03d", i), "f1", "a"))
	}
	if _, err := b.ReserveAliases(ctx, as, now); err != nil {
		t.Fatal(err)
	}
	renamed := acrossAlias("u:000", "f1", "a")
	renamed.Extra = "a new title"
	changes := []Change{{ExternalID: "a", Hash: "h", Type: "story", Action: ActionPublish, Data: []byte(`{"a":1}`)}}
	if _, err := b.CommitAliases(ctx, "f1", changes, nil, []Alias{renamed}, nil, now); err != nil {
		t.Fatal(err)
	}
	records, size := logSize(t, b)
	if records < 2 {
		t.Errorf("a log of %d bytes is in %d records; want it in parts", size, records)
	}
	err = b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bAliasLog).ForEach(func(k, v []byte) error {
			if len(v) > 2*logPartBytes {
				t.Errorf("log record %x of %d bytes; want at most about %d", k, len(v), logPartBytes)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}

	b = crashAndReopen(t, b, path)
	fps := make([]AliasFP, len(as))
	for i, a := range as {
		fps[i] = a.AliasFP
	}
	got, err := b.LookupAliases(ctx, fps, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		want := as[i].Extra
		if i == 0 {
			want = renamed.Extra
		}
		if !g.Found || g.Target != (Key{"f1", "a"}) || g.Extra != want {
			t.Errorf("after the crash, %s = %+v; want held by f1/a with extra %q", g.FP, g, want)
		}
	}
}
