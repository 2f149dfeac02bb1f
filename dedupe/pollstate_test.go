package dedupe_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/feedworker/feedworker/dedupe"
)

// testPollState: a feed's poll state is kept whole, apart from every other
// feed's and from its validators, and the zero state deletes it.
func testPollState(t *testing.T, open opener) {
	ctx := context.Background()
	s := open(t, dedupe.RedisOptions{})
	ps, ok := s.(dedupe.PollStates)
	if !ok {
		t.Fatalf("%T does not keep poll states", s)
	}
	if _, found, err := ps.PollState(ctx, "a"); err != nil || found {
		t.Fatalf("poll state of a fresh store: found=%v err=%v", found, err)
	}
	want := dedupe.PollState{
		URL:        "https://example.org/feed.xml",
		NotBefore:  t0.Add(40 * time.Second),
		Failures:   3,
		GoneConfig: "sha256:abc",
		MovedTo:    "https://example.org/new.xml",
		Warnings:   map[string]string{"moved": "moved permanently", "guid_reuse": "feed uses GUID \"x\" for 2 items"},
	}
	if err := ps.SetPollState(ctx, "a", want); err != nil {
		t.Fatal(err)
	}
	if err := ps.SetPollState(ctx, "b", dedupe.PollState{URL: "https://example.org/b", Failures: 1}); err != nil {
		t.Fatal(err)
	}
	// Validators of the same feed live beside it without touching it.
	mustCommit(t, s, "a", nil, &dedupe.Validators{ETag: `"e1"`}, t0)
	got, found, err := ps.PollState(ctx, "a")
	if err != nil || !found {
		t.Fatalf("poll state of a: found=%v err=%v", found, err)
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("poll state of a (-want +got):\n%s", diff)
	}
	if v, _, err := s.Validators(ctx, "a"); err != nil || v.ETag != `"e1"` {
		t.Errorf("validators of a = %+v, %v; want the etag stored beside the poll state", v, err)
	}
	if got, _, _ := ps.PollState(ctx, "b"); got.Failures != 1 || got.URL != "https://example.org/b" {
		t.Errorf("poll state of b = %+v", got)
	}

	// Replacing keeps only the new state; the zero state deletes it.
	if err := ps.SetPollState(ctx, "a", dedupe.PollState{URL: want.URL}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := ps.PollState(ctx, "a"); got.Failures != 0 || got.MovedTo != "" || len(got.Warnings) != 0 {
		t.Errorf("replaced poll state kept old fields: %+v", got)
	}
	if err := ps.SetPollState(ctx, "a", dedupe.PollState{}); err != nil {
		t.Fatal(err)
	}
	if _, found, err := ps.PollState(ctx, "a"); err != nil || found {
		t.Errorf("after storing the zero state: found=%v err=%v, want none", found, err)
	}
	if _, found, _ := ps.PollState(ctx, "b"); !found {
		t.Error("deleting a's poll state deleted b's")
	}

	// Many at once: in order, with the missing ones marked.
	if err := ps.SetPollState(ctx, "a", want); err != nil {
		t.Fatal(err)
	}
	pb, ok := s.(dedupe.PollStatesBatcher)
	if !ok {
		t.Fatalf("%T does not read poll states in batches", s)
	}
	many, foundMany, err := pb.PollStatesMany(ctx, []string{"b", "none", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(many) != 3 || !foundMany[0] || foundMany[1] || !foundMany[2] || many[0].Failures != 1 || many[2].MovedTo != want.MovedTo || many[2].Warnings["moved"] == "" {
		t.Errorf("PollStatesMany = %+v, %v", many, foundMany)
	}
	for _, bad := range []string{"", "a/b"} {
		if err := ps.SetPollState(ctx, bad, dedupe.PollState{Failures: 1}); !errors.Is(err, dedupe.ErrInvalid) {
			t.Errorf("SetPollState(%q) = %v, want ErrInvalid", bad, err)
		}
		if _, _, err := ps.PollState(ctx, bad); !errors.Is(err, dedupe.ErrInvalid) {
			t.Errorf("PollState(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}
