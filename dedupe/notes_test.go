package dedupe_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

func TestRedisNotes(t *testing.T) { testNotes(t, openRedis) }
func TestBoltNotes(t *testing.T)  { testNotes(t, openBolt) }

func testNotes(t *testing.T, open opener) {
	t.Parallel()
	s := open(t, dedupe.RedisOptions{})
	ctx := context.Background()
	if _, ok, err := s.Note(ctx, "f", "ical"); ok || err != nil {
		t.Fatalf("empty store: Note = ok %v, err %v; want none", ok, err)
	}
	if err := s.SetNote(ctx, "f", "ical", []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetNote(ctx, "g", "ical", []byte(`other feed`)); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Note(ctx, "f", "ical")
	if err != nil || !ok || string(got) != `{"a":1}` {
		t.Fatalf("Note = %q, %v, %v; want the stored note", got, ok, err)
	}
	if err := s.SetNote(ctx, "f", "ical", []byte(`{"a":2}`)); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.Note(ctx, "f", "ical"); string(got) != `{"a":2}` {
		t.Errorf("after replace: %q", got)
	}
	if err := s.SetNote(ctx, "f", "ical", nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Note(ctx, "f", "ical"); ok {
		t.Errorf("note still there after SetNote(nil)")
	}
	if got, _, _ := s.Note(ctx, "g", "ical"); string(got) != "other feed" {
		t.Errorf("other feed's note = %q", got)
	}
	for _, bad := range []struct{ feed, name string }{{"a/b", "ical"}, {"f", "Bad Name"}, {"f", ""}} {
		if err := s.SetNote(ctx, bad.feed, bad.name, []byte("x")); !errors.Is(err, dedupe.ErrInvalid) {
			t.Errorf("SetNote(%q, %q) = %v, want ErrInvalid", bad.feed, bad.name, err)
		}
	}
}

func TestRedisCommitNotes(t *testing.T)   { testCommitNotes(t, openRedis) }
func TestClusterCommitNotes(t *testing.T) { testCommitNotes(t, openCluster) }
func TestBoltCommitNotes(t *testing.T)    { testCommitNotes(t, openBolt) }

// testCommitNotes: CommitAliases sets the notes it is given, and deletes
// those given nil, with the commit; a bad note name fails it before
// anything is written, and a commit that fails leaves the notes as they
// were.
func testCommitNotes(t *testing.T, open opener) {
	t.Parallel()
	s := open(t, dedupe.RedisOptions{})
	ac, ok := s.(dedupe.AliasCommitter)
	if !ok {
		t.Fatalf("%T is no AliasCommitter", s)
	}
	ctx, now := t.Context(), time.Now()
	alias := dedupe.Alias{AliasFP: dedupe.AliasFP{FeedID: "f", FP: "u:1"}, Target: dedupe.Key{FeedID: "f", ExternalID: "a"}, Type: "story"}
	note := func(name string) string {
		t.Helper()
		b, ok, err := s.Note(ctx, "f", name)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return "(none)"
		}
		return string(b)
	}

	bad := []dedupe.NoteWrite{{Name: "newest", Data: []byte("1")}, {Name: "Bad/Name", Data: []byte("x")}}
	if _, err := ac.CommitAliases(ctx, "f", []dedupe.Change{change("a", "h", dedupe.ActionPublish)}, nil, []dedupe.Alias{alias}, bad, now); !errors.Is(err, dedupe.ErrInvalid) {
		t.Errorf("CommitAliases with a bad note name: %v; want ErrInvalid", err)
	}
	if _, ok, err := s.Record(ctx, dedupe.Key{FeedID: "f", ExternalID: "a"}); ok || err != nil {
		t.Errorf("record after a refused CommitAliases: found %v, %v; want none", ok, err)
	}
	if got := note("newest"); got != "(none)" {
		t.Errorf("note after a refused CommitAliases = %s; want none", got)
	}

	notes := []dedupe.NoteWrite{{Name: "newest", Data: []byte("2026-03-01T00:00:00Z")}, {Name: "held", Data: []byte(`{"items":[]}`)}}
	out, err := ac.CommitAliases(ctx, "f", []dedupe.Change{change("a", "h", dedupe.ActionPublish)}, nil, []dedupe.Alias{alias}, notes, now)
	if err != nil || len(out) != 1 || out[0] != dedupe.OutcomeNew {
		t.Fatalf("CommitAliases = %v, %v; want [new]", out, err)
	}
	if got := note("newest"); got != "2026-03-01T00:00:00Z" {
		t.Errorf("note newest after CommitAliases = %s", got)
	}
	if got := note("held"); got != `{"items":[]}` {
		t.Errorf("note held after CommitAliases = %s", got)
	}
	// Without aliases, and deleting one.
	notes = []dedupe.NoteWrite{{Name: "newest", Data: []byte("2026-03-02T00:00:00Z")}, {Name: "held"}}
	if _, err := ac.CommitAliases(ctx, "f", []dedupe.Change{change("b", "h", dedupe.ActionPublish)}, nil, nil, notes, now); err != nil {
		t.Fatal(err)
	}
	if got, held := note("newest"), note("held"); got != "2026-03-02T00:00:00Z" || held != "(none)" {
		t.Errorf("notes after a CommitAliases without aliases: newest %s, held %s; want 2026-03-02T00:00:00Z and none", got, held)
	}

	// A commit the store refuses (under a fencing token that is not the
	// feed's) writes no note.
	tok, err := s.(dedupe.FeedLeaser).AcquireFeedLeases(ctx, []string{"f"}, "a", time.Minute)
	if err != nil || tok[0] == 0 {
		t.Fatalf("AcquireFeedLeases = %v, %v", tok, err)
	}
	if _, err := ac.CommitAliases(ctx, "f", []dedupe.Change{change("c", "h", dedupe.ActionPublish)}, &dedupe.Validators{Fence: tok[0] + 1}, []dedupe.Alias{alias},
		[]dedupe.NoteWrite{{Name: "newest", Data: []byte("2026-03-03T00:00:00Z")}}, now); !errors.Is(err, dedupe.ErrFenced) {
		t.Fatalf("CommitAliases under another token: %v; want ErrFenced", err)
	}
	if got := note("newest"); got != "2026-03-02T00:00:00Z" {
		t.Errorf("note newest after a failed commit = %s; want it unchanged", got)
	}
}
