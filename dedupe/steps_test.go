package dedupe_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// testCutFirstSight: the first sight of a feed too big for one step is
// stopped (its context cancelled) after two of its steps, then done again
// as the next poll does it. Every item is recorded, exactly the newest
// initialItems are queued, each once, and the validators are stored only
// by the complete Commit.
func testCutFirstSight(t *testing.T, open opener) {
	const (
		n            = 3*dedupe.StepItems + 17 // four steps
		initialItems = 10
		cutAfter     = 2
	)
	s := open(t, dedupe.RedisOptions{})
	v := &dedupe.Validators{ETag: `"big"`}
	var its []dedupe.Item
	for i := range n {
		its = append(its, dedupe.Item{ExternalID: fmt.Sprintf("item-%05d", i), Hash: "h"})
	}
	// The "newest" items, spread over every step in any order the store
	// takes the items in: what publish decides on a first sight.
	published := map[string]bool{}
	for i := range initialItems {
		published[its[i*(n/initialItems)].ExternalID] = true
	}
	firstSight := func() []dedupe.Change {
		var ch []dedupe.Change
		for _, it := range its {
			a := dedupe.ActionSeeOnly
			if published[it.ExternalID] {
				a = dedupe.ActionPublish
			}
			ch = append(ch, change(it.ExternalID, it.Hash, a))
		}
		return ch
	}

	d := mustDiff(t, s, "big", its, v, t0)
	if d.Known {
		t.Fatalf("first Diff Known = true; want a first sight")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	steps := 0
	dedupe.SetAfterStep(s, func(op string, done int) {
		if op == "commit" {
			steps = done
			if done == cutAfter {
				cancel()
			}
		}
	})
	if _, err := s.Commit(ctx, "big", firstSight(), v, t0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit stopped after %d steps: err = %v; want context.Canceled", cutAfter, err)
	}
	if steps != cutAfter {
		t.Errorf("the cut Commit did %d steps; want %d", steps, cutAfter)
	}
	dedupe.SetAfterStep(s, nil)
	if _, ok, err := s.Validators(context.Background(), "big"); err != nil || ok {
		t.Errorf("validators after a cut Commit: ok %v, err %v; want none (the feed is fetched again)", ok, err)
	}

	// The next poll: still a first sight; what the cut Commit recorded is
	// found, the rest is new.
	t1 := t0.Add(time.Minute)
	d = mustDiff(t, s, "big", its, v, t1)
	if d.Known || d.ValidatorsStored {
		t.Errorf("Diff after a cut first sight: Known %v, ValidatorsStored %v; want both false", d.Known, d.ValidatorsStored)
	}
	recorded := 0
	for _, st := range d.Status {
		if st != dedupe.StatusNew {
			recorded++
		}
	}
	if recorded != cutAfter*dedupe.StepItems {
		t.Errorf("after %d steps, %d items recorded; want %d", cutAfter, recorded, cutAfter*dedupe.StepItems)
	}
	out := mustCommit(t, s, "big", firstSight(), v, t1)
	counts := map[dedupe.Outcome]int{}
	for _, o := range out {
		counts[o]++
	}
	if counts[dedupe.OutcomeUnchanged] != recorded || counts[dedupe.OutcomeNew]+counts[dedupe.OutcomeSeen]+recorded != n {
		t.Errorf("redone Commit outcomes %v; want %d unchanged (recorded before), the rest new or seen", counts, recorded)
	}
	if got, ok, err := s.Validators(context.Background(), "big"); err != nil || !ok || got != *v {
		t.Errorf("validators after the redone Commit = %+v, %v, %v; want %+v", got, ok, err, *v)
	}

	// Exactly the initial items are queued, once each.
	var queued []string
	for call := 0; call < 100; call++ {
		// A claim with the same owner string takes its items again.
		c := mustClaim(t, s, fmt.Sprintf("w#%d", call), 100, t1)
		if len(c) == 0 {
			break
		}
		queued = append(queued, keys(c)...)
	}
	var want []string
	for ext := range published {
		want = append(want, "big/"+ext)
	}
	sort.Strings(queued)
	sort.Strings(want)
	if fmt.Sprint(queued) != fmt.Sprint(want) {
		t.Errorf("queued %d items %v; want the %d initial items once each %v", len(queued), queued, len(want), want)
	}
	if st := mustStats(t, s, t1); st.Outbox != initialItems {
		t.Errorf("outbox holds %d entries; want %d", st.Outbox, initialItems)
	}

	// The poll after: a known feed, nothing new, validators stored by Diff.
	d = mustDiff(t, s, "big", its, &dedupe.Validators{ETag: `"big2"`}, t1.Add(time.Minute))
	if !d.Known || d.Dirty() || !d.ValidatorsStored {
		t.Errorf("Diff after the complete first sight: Known %v, dirty %v, stored %v; want known, clean, stored", d.Known, d.Dirty(), d.ValidatorsStored)
	}
}

// testCutDiff: a Diff cut between its steps stores no validators, and the
// next one, complete, does.
func testCutDiff(t *testing.T, open opener) {
	const n = dedupe.StepItems + 5 // two steps
	s := open(t, dedupe.RedisOptions{})
	var its []dedupe.Item
	var ch []dedupe.Change
	for i := range n {
		ext := fmt.Sprintf("x%05d", i)
		its = append(its, dedupe.Item{ExternalID: ext, Hash: "h"})
		ch = append(ch, change(ext, "h", dedupe.ActionSeeOnly))
	}
	mustCommit(t, s, "f", ch, &dedupe.Validators{ETag: "1"}, t0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dedupe.SetAfterStep(s, func(op string, done int) {
		if op == "diff" && done == 1 {
			cancel()
		}
	})
	if _, err := s.Diff(ctx, "f", its, &dedupe.Validators{ETag: "2"}, t0.Add(time.Minute)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Diff stopped after one step: err = %v; want context.Canceled", err)
	}
	dedupe.SetAfterStep(s, nil)
	if v, _, _ := s.Validators(context.Background(), "f"); v.ETag != "1" {
		t.Errorf("validators after a cut Diff = %+v; want the earlier ones (ETag 1)", v)
	}
	d := mustDiff(t, s, "f", its, &dedupe.Validators{ETag: "2"}, t0.Add(2*time.Minute))
	if !d.Known || d.Dirty() || !d.ValidatorsStored || len(d.Status) != n {
		t.Errorf("complete Diff: Known %v, dirty %v, stored %v, %d verdicts; want known, clean, stored, %d", d.Known, d.Dirty(), d.ValidatorsStored, len(d.Status), n)
	}
}
