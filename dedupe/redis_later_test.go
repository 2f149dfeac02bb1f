package dedupe_test

import (
	"context"
	"fmt"
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
	const callers, each = 4, 2
	// The window closes once every caller is in it, whatever the
	// scheduler does: no linger, and a leader that waits for them.
	s.SetLater(0, func() {
		// On the leader's goroutine: t.Error, not t.Fatal.
		for deadline := time.Now().Add(time.Minute); s.LaterWaiting() < callers; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("%d of %d callers in the window after a minute", s.LaterWaiting(), callers)
				return
			}
		}
	})
	var ch []dedupe.Change
	for i := range callers * each {
		ch = append(ch, change(fmt.Sprint("item", i), "h1", dedupe.ActionPublish))
	}
	mustCommit(t, s, "f", ch, nil, t0)
	claimed := mustClaim(t, s, "w", callers*each, t0)
	if len(claimed) != callers*each {
		t.Fatalf("claimed %d, want %d", len(claimed), callers*each)
	}
	content := map[string]int64{}
	results := make([][]dedupe.ClaimResult, callers)
	before := rt.Count()
	var wg sync.WaitGroup
	for k := range callers {
		var ops []dedupe.ClaimOp
		for _, cl := range claimed[k*each : (k+1)*each] {
			id := int64(100 + len(content))
			content[cl.Key.ExternalID] = id
			ops = append(ops, dedupe.ClaimOp{Key: cl.Key, Owner: "w", Settle: &dedupe.Settlement{Kind: dedupe.Delivered, ContentID: id, Type: "story", Hash: "h1"}})
		}
		wg.Go(func() { results[k] = s.ClaimOpsLater(context.Background(), ops, time.Now()) })
	}
	wg.Wait()
	if n := rt.Count() - before; n != 1 {
		t.Errorf("%d callers' outcomes took %d round trips; want 1", callers, n)
	}
	for k, res := range results {
		if len(res) != each {
			t.Fatalf("caller %d got %d results; want %d", k, len(res), each)
		}
		for i, r := range res {
			if r.Err != nil || !r.Held {
				t.Errorf("caller %d op %d: held %v, err %v; want held", k, i, r.Held, r.Err)
			}
		}
	}
	for ext, id := range content {
		if r := mustRecord(t, s, "f", ext); r.ContentID != id || r.PendingHash != "" {
			t.Errorf("record %s = %+v; want content %d and no pending mark", ext, r, id)
		}
	}
	if st := mustStats(t, s, t0); st.Outbox != 0 {
		t.Errorf("outbox after the outcomes = %d; want 0", st.Outbox)
	}
}
