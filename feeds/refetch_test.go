package feeds

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/feedworker/feedworker/config"
)

// TestPollerRefetch: after Refetch the next poll is unconditional (the
// store lost the validators, and what the feed holds must be seen again),
// neither the cached nor the store's validators are used, and it is
// scheduled within the interval rather than after it.
func TestPollerRefetch(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, etagFeed)
	h := newTestHandler()
	p := newTestPoller(t, config.HTTP{}, h, nil)
	p.Update([]config.Feed{testFeed("a", srv.URL+"/a", time.Hour)})
	if r := pollOne(t, p); r.Class != ClassOK {
		t.Fatalf("first poll: %+v", r)
	}
	if r := pollOne(t, p); r.Class != ClassNotModified {
		t.Fatalf("second poll: %+v", r)
	}
	h.store["a"] = Validators{ETag: `"left by a racing commit"`}
	p.Refetch()
	if next := p.status(t, "a").NextPoll; time.Until(next) > StartSpread {
		t.Errorf("next poll at %v; want within the start spread", next)
	}
	if r := pollOne(t, p); r.Class != ClassOK {
		t.Fatalf("poll after Refetch: %+v; want a full fetch (200)", r)
	}
	if r := pollOne(t, p); r.Class != ClassNotModified {
		t.Fatalf("poll after the refetch was handled: %+v; want 304 again", r)
	}
	if d := cmp.Diff([]string{"", `"etag-/a"`, "", `"etag-/a"`}, srv.sent("/a")); d != "" {
		t.Errorf("If-None-Match sent (-want +got):\n%s", d)
	}
}
