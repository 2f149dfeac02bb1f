package feeds

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/feedworker/feedworker/config"
)

// batchHandler and batchOwner answer for many feeds at once and count how
// they were asked.
type batchHandler struct {
	*testHandler
	batches [][]string
}

func (h *batchHandler) ValidatorsAll(ctx context.Context, ids []string) (map[string]Validators, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.batches = append(h.batches, slices.Clone(ids))
	out := map[string]Validators{}
	for _, id := range ids {
		if v, ok := h.store[id]; ok {
			out[id] = v
		}
	}
	return out, nil
}

type batchOwner struct {
	*testOwner
	batches int
	asked   map[string]int // Own calls per feed
}

func (o *batchOwner) Own(ctx context.Context, feedID string) (bool, error) {
	o.mu.Lock()
	o.asked[feedID]++
	o.mu.Unlock()
	return o.testOwner.Own(ctx, feedID)
}

func (o *batchOwner) OwnAll(ctx context.Context, ids []string) (map[string]bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.batches++
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = o.own[id]
	}
	return out, nil
}

// TestPollerBatchOwnerAndHandler checks that a pass asks a BatchOwner and
// a BatchHandler once for all its feeds, skips the feeds another replica
// owns without asking again, and uses the loaded validators.
func TestPollerBatchOwnerAndHandler(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, etagFeed)
	h := &batchHandler{testHandler: newTestHandler()}
	owner := &batchOwner{testOwner: &testOwner{own: map[string]bool{}}, asked: map[string]int{}}
	var feeds []config.Feed
	for i := range 40 {
		id := fmt.Sprintf("f%02d", i)
		feeds = append(feeds, testFeed(id, srv.URL+"/"+id, time.Hour))
		owner.own[id] = i != 3
		if i%2 == 0 {
			// Stored by an earlier pass: the first poll is conditional.
			h.store[id] = Validators{ETag: `"etag-/` + id + `"`}
		}
	}
	p := newTestPoller(t, config.HTTP{MaxConcurrency: 4, PerHostConcurrency: 2}, h, owner)
	p.Update(feeds)

	res := p.PollAll(t.Context())
	if owner.batches != 1 || len(h.batches) != 1 || len(h.batches[0]) != 39 {
		t.Fatalf("OwnAll asked %d times, ValidatorsAll %d times (%v); want once each, for the 39 owned feeds",
			owner.batches, len(h.batches), h.batches)
	}
	for i, r := range res {
		id := fmt.Sprintf("f%02d", i)
		want := ClassOK
		if i%2 == 0 {
			want = ClassNotModified
		}
		switch {
		case i == 3:
			if !r.Skipped || srv.count("/"+id) != 0 || owner.asked[id] != 0 {
				t.Errorf("%s, owned elsewhere: %+v, %d requests, Own asked %d times; want skipped, none, none",
					id, r, srv.count("/"+id), owner.asked[id])
			}
		case r.Class != want:
			t.Errorf("%s: result %+v, want %s", id, r, want)
		}
		if n := h.get(h.loads, id); n != 0 {
			t.Errorf("%s: validators loaded alone %d times, want 0 (loaded with the pass)", id, n)
		}
	}
	// The next pass knows every validator already.
	p.PollAll(t.Context())
	if len(h.batches) != 1 {
		t.Errorf("ValidatorsAll asked %d times after two passes, want 1", len(h.batches))
	}
	if got := srv.sent("/f01"); len(got) != 2 || got[1] != `"etag-/f01"` {
		t.Errorf("f01 sent If-None-Match %q, want none then its ETag", got)
	}
}
