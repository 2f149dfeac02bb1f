package dedupe_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

func testAliases(t *testing.T, open opener) {
	ctx := context.Background()
	s := open(t, dedupe.RedisOptions{})
	ai, ok := s.(dedupe.AliasIndex)
	if !ok {
		t.Fatalf("%T does not keep aliases", s)
	}
	now := time.Now()
	feedA := dedupe.AliasFP{FeedID: "a", FP: "u:example.com/story"}
	feedB := dedupe.AliasFP{FeedID: "b", FP: "u:example.com/story"}
	global := dedupe.AliasFP{FP: "u:example.com/story"}
	lookup := func(fps ...dedupe.AliasFP) []dedupe.Alias {
		t.Helper()
		out, err := ai.LookupAliases(ctx, fps, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(fps) {
			t.Fatalf("%d aliases for %d fingerprints", len(out), len(fps))
		}
		return out
	}
	put := func(as ...dedupe.Alias) {
		t.Helper()
		if err := ai.PutAliases(ctx, as, now); err != nil {
			t.Fatal(err)
		}
	}
	if got := lookup(feedA, global); got[0].Found || got[1].Found {
		t.Fatalf("aliases before any put: %+v", got)
	}
	put(dedupe.Alias{AliasFP: feedA, Target: dedupe.Key{FeedID: "a", ExternalID: "e1"}, Type: "story", Extra: "ff00"},
		dedupe.Alias{AliasFP: global, Target: dedupe.Key{FeedID: "a", ExternalID: "e1"}, Type: "story"})
	got := lookup(feedA, feedB, global)
	if !got[0].Found || got[0].Target != (dedupe.Key{FeedID: "a", ExternalID: "e1"}) || got[0].Type != "story" || got[0].Extra != "ff00" || got[0].AliasFP != feedA {
		t.Errorf("feed alias: %+v", got[0])
	}
	if got[1].Found {
		t.Errorf("another feed sees feed a's alias: %+v", got[1])
	}
	if !got[2].Found || got[2].Target.FeedID != "a" {
		t.Errorf("alias across feeds: %+v", got[2])
	}

	// A feed's alias follows its latest target; one across feeds keeps the first.
	put(dedupe.Alias{AliasFP: feedA, Target: dedupe.Key{FeedID: "a", ExternalID: "e2"}, Type: "story"},
		dedupe.Alias{AliasFP: global, Target: dedupe.Key{FeedID: "b", ExternalID: "x"}, Type: "story"})
	got = lookup(feedA, global)
	if got[0].Target.ExternalID != "e2" || got[0].Extra != "" {
		t.Errorf("feed alias after overwrite: %+v", got[0])
	}
	if got[1].Target != (dedupe.Key{FeedID: "a", ExternalID: "e1"}) {
		t.Errorf("alias across feeds moved to a later sighting: %+v", got[1])
	}

	// Aliases expire with their TTL.
	short := dedupe.AliasFP{FeedID: "a", FP: "t:short"}
	now = time.Now()
	put(dedupe.Alias{AliasFP: short, Target: dedupe.Key{FeedID: "a", ExternalID: "e3"}, Type: "story", TTL: 20 * time.Millisecond})
	deadline := time.Now().Add(20 * time.Second)
	for lookup(short)[0].Found {
		if time.Now().After(deadline) {
			t.Fatal("an alias outlived its TTL by 20s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !lookup(feedA)[0].Found {
		t.Error("an alias with the retention expired with a short one")
	}

	// A reservation across feeds: the first target holds it, with the time
	// of its reservation, which its renewals (reserve or put) keep.
	resv := dedupe.AliasFP{FP: "u:example.com/reserved"}
	reserve := func(at time.Time, as ...dedupe.Alias) []dedupe.Alias {
		t.Helper()
		out, err := ai.ReserveAliases(ctx, as, at)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(as) {
			t.Fatalf("%d holders for %d reservations", len(out), len(as))
		}
		return out
	}
	first := time.UnixMilli(time.Now().UnixMilli())
	later := first.Add(time.Minute)
	ka, kb := dedupe.Key{FeedID: "a", ExternalID: "r1"}, dedupe.Key{FeedID: "b", ExternalID: "r2"}
	if got := reserve(first, dedupe.Alias{AliasFP: resv, Target: ka, Type: "story", Extra: "title a"}); got[0].Target != ka || !got[0].Since.Equal(first) || got[0].Extra != "title a" {
		t.Errorf("first reservation: %+v", got[0])
	}
	if got := reserve(later, dedupe.Alias{AliasFP: resv, Target: kb, Type: "story"}); got[0].Target != ka || !got[0].Since.Equal(first) || got[0].Extra != "title a" {
		t.Errorf("another target's reservation: holder %+v, want a's since %v", got[0], first)
	}
	now = later
	put(dedupe.Alias{AliasFP: resv, Target: ka, Type: "story", Extra: "title a2"})
	if got := reserve(later, dedupe.Alias{AliasFP: resv, Target: ka, Type: "story", Extra: "title a3"}); got[0].Target != ka || !got[0].Since.Equal(first) {
		t.Errorf("renewed reservation: %+v, want since %v kept", got[0], first)
	}
	if got := lookup(resv); !got[0].Found || got[0].Target != ka || !got[0].Since.Equal(first) {
		t.Errorf("look-up of a reservation: %+v", got[0])
	}
	// Many reservations in one call, given out of key order (the store
	// may apply them in its own order): each answer is its own
	// reservation's, and of two on one fingerprint the first given holds
	// it.
	batch := []dedupe.Alias{
		{AliasFP: dedupe.AliasFP{FP: "u:example.com/z"}, Target: dedupe.Key{FeedID: "c", ExternalID: "z"}, Type: "story"},
		{AliasFP: dedupe.AliasFP{FP: "u:example.com/m"}, Target: dedupe.Key{FeedID: "c", ExternalID: "m1"}, Type: "story"},
		{AliasFP: dedupe.AliasFP{FP: "u:example.com/a"}, Target: dedupe.Key{FeedID: "c", ExternalID: "a"}, Type: "story"},
		{AliasFP: dedupe.AliasFP{FP: "u:example.com/m"}, Target: dedupe.Key{FeedID: "d", ExternalID: "m2"}, Type: "story"},
	}
	held := reserve(later, batch...)
	for i, want := range []dedupe.Key{batch[0].Target, batch[1].Target, batch[2].Target, batch[1].Target} {
		if held[i].Target != want || held[i].FP != batch[i].FP {
			t.Errorf("reservation %d of a batch (%s for %s): holder %+v, want %s", i, batch[i].FP, batch[i].Target, held[i], want)
		}
	}
	if _, err := ai.ReserveAliases(ctx, []dedupe.Alias{{AliasFP: feedA, Target: ka, Type: "story"}}, now); !errors.Is(err, dedupe.ErrInvalid) {
		t.Errorf("reserving a feed's alias: %v, want ErrInvalid", err)
	}

	for _, bad := range []dedupe.AliasFP{{FeedID: "a", FP: ""}, {FeedID: "a", FP: "x|y"}, {FeedID: "a/b", FP: "x"}} {
		if _, err := ai.LookupAliases(ctx, []dedupe.AliasFP{bad}, now); !errors.Is(err, dedupe.ErrInvalid) {
			t.Errorf("look up %+v: %v, want ErrInvalid", bad, err)
		}
	}
	if err := ai.PutAliases(ctx, []dedupe.Alias{{AliasFP: feedA, Target: dedupe.Key{FeedID: "a"}}}, now); !errors.Is(err, dedupe.ErrInvalid) {
		t.Errorf("put without target: %v, want ErrInvalid", err)
	}
}
