package dedupe_test

import (
	"context"
	"errors"
	"testing"

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
