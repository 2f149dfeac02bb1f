package dedupe_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
)

// TestRedisClaimOpsLater: outcomes handed over by several callers at
// about the same time go to Redis in one round trip, and each caller gets
// its own ops' results, applied as ClaimOps applies them.
func TestRedisClaimOpsLater(t *testing.T) {
	t.Parallel()
	c, prefix := dedupetest.Redis(t)
	rt := &dedupe.RoundTripCounter{}
	c.AddHook(rt)
	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
	ctx := t.Context()
	const callers = 4 // caller k hands over k+1 outcomes
	// The window closes once every caller is in it, whatever the
	// scheduler does: no linger, and a leader that waits for them (once).
	var held sync.Once
	s.SetLater(0, func() {
		held.Do(func() {
			// On the leader's goroutine: t.Error, not t.Fatal.
			for deadline := time.Now().Add(time.Minute); s.LaterWaiting() < callers; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Errorf("%d of %d callers in the window after a minute", s.LaterWaiting(), callers)
					return
				}
			}
		})
	})
	_, claimed := queueAndClaim(t, s, 10)
	// A Redis that does not have the settle script yet loads it in round
	// trips of its own: loaded here, before they are counted.
	s.ClaimOps(ctx, []dedupe.ClaimOp{{Key: dedupe.Key{FeedID: "f", ExternalID: "warm"}, Owner: "w", TTL: time.Second}}, t0)

	type want struct {
		ext     string
		content int64
		held    bool
	}
	wants := make([][]want, callers)
	results := make([][]dedupe.ClaimResult, callers)
	before := rt.Count()
	var wg sync.WaitGroup
	next := 0
	for k := range callers {
		var ops []dedupe.ClaimOp
		for range k + 1 {
			cl := claimed[next]
			id := int64(100 + next)
			owner := "w"
			if next%3 == 2 {
				owner = "someone else" // does not hold the claim: recorded as lapsed, Held false
			}
			wants[k] = append(wants[k], want{cl.Key.ExternalID, id, owner == "w"})
			ops = append(ops, dedupe.ClaimOp{Key: cl.Key, Owner: owner, Settle: &dedupe.Settlement{Kind: dedupe.Delivered, ContentID: id, Type: "story", Hash: "h1"}})
			next++
		}
		wg.Go(func() { results[k] = s.ClaimOpsLater(context.Background(), ops, time.Now()) })
	}
	wg.Wait()
	if n := rt.Count() - before; n != 1 {
		t.Errorf("%d callers' outcomes took %d round trips; want 1", callers, n)
	}
	for k, res := range results {
		if len(res) != len(wants[k]) {
			t.Fatalf("caller %d got %d results; want %d", k, len(res), len(wants[k]))
		}
		for i, r := range res {
			if r.Err != nil || r.Held != wants[k][i].held {
				t.Errorf("caller %d op %d (%s): held %v, err %v; want held %v", k, i, wants[k][i].ext, r.Held, r.Err, wants[k][i].held)
			}
		}
	}
	for _, ws := range wants {
		for _, w := range ws {
			if r := mustRecord(t, s, "f", w.ext); r.ContentID != w.content {
				t.Errorf("record %s = %+v; want content %d", w.ext, r, w.content)
			}
		}
	}
}
