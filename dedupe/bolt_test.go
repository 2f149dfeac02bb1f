package dedupe_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// TestBoltSurvivesReopen checks that everything a worker relies on after a
// restart is on disk: records, validators, the outbox and dead letters;
// and that claims of the dead process are dropped, their items offered
// again after the reclaim delay with their pending marks kept.
func TestBoltSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	ctx := context.Background()
	s, err := dedupe.OpenBolt(path, dedupe.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := &dedupe.Validators{ETag: `"e"`, LastModified: "lm"}
	mustCommit(t, s, "f", []dedupe.Change{
		change("a", "h1", dedupe.ActionPublish),
		change("b", "h1", dedupe.ActionPublish),
		change("c", "h1", dedupe.ActionSeeOnly),
	}, v, t0)
	c := mustClaim(t, s, "w", 2, t0)
	if len(c) != 2 {
		t.Fatalf("claimed %d; want 2", len(c))
	}
	mustSettle(t, s, c[1].Key, "w", dedupe.Settlement{Kind: dedupe.Dead, Status: 400, Reason: "bad"}, t0)
	// c[0] stays claimed: the process "crashes" mid-POST.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = dedupe.OpenBolt(path, dedupe.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, ok, err := s.Validators(ctx, "f"); err != nil || !ok || got != *v {
		t.Errorf("Validators after reopen = %+v, %v, %v; want %+v", got, ok, err, *v)
	}
	if r := mustRecord(t, s, "f", "c"); r.State != dedupe.StateSeenOnly {
		t.Errorf("record c state = %c; want seen only", r.State)
	}
	d := mustDiff(t, s, "f", items("a", "h1", "b", "h1", "c", "h1"), nil, t0)
	if d.Dirty() || !d.Known {
		t.Errorf("Diff after reopen = %+v; want known and nothing new", d)
	}
	// The item the dead process was sending waits ReclaimDelay (a POST it
	// had in flight may still land), then comes back marked pending.
	now := time.Now()
	if st := mustStats(t, s, now); st != (dedupe.Stats{Outbox: 1, Due: 0, DeadLetters: 1}) {
		t.Errorf("Stats after reopen = %+v; want 1 queued (not yet due), 1 dead", st)
	}
	if got := mustClaim(t, s, "w2", 5, now); len(got) != 0 {
		t.Fatalf("claim right after reopen = %+v; want nothing before the reclaim delay", got)
	}
	got := mustClaim(t, s, "w2", 5, now.Add(31*time.Second))
	if len(got) != 1 || got[0].Key != c[0].Key || got[0].Record.PendingHash != "h1" {
		t.Fatalf("claim after the reclaim delay = %+v; want %s, marked pending", got, c[0].Key)
	}
	if dl, err := s.DeadLetters(ctx); err != nil || len(dl) != 1 || dl[0].Reason != "bad" {
		t.Errorf("DeadLetters after reopen = %+v, %v; want one with reason bad", dl, err)
	}
}

// TestBoltLocked checks that a second process cannot open a file in use,
// which is what makes dropping claims on open safe.
func TestBoltLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := dedupe.OpenBolt(path, dedupe.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	if s2, err := dedupe.OpenBolt(path, dedupe.BoltOptions{LockTimeout: 100 * time.Millisecond}); err == nil {
		s2.Close()
		t.Fatalf("second OpenBolt succeeded; want a lock timeout")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("second OpenBolt took %v; want about the 100ms lock timeout", d)
	}
}
