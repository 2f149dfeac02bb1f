package publish_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
)

// refuseExternalIDFilter plays a service whose external_id is not
// searchable: a look-up filtering on it is refused with a 400.
func refuseExternalIDFilter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Query().Get("filters_json"), "external_id") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"status":400,"message":"external_id is not searchable","field":"filters_json"}}`)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// TestUnverifiableGoesToDeadLetters: a POST that may have landed (applied,
// then answered 500) on a service that cannot filter on external_id and
// holds more content than one look-up may read. The item is not posted
// blind: it is retried, then dead-lettered with a reason an operator can
// act on.
func TestUnverifiableGoesToDeadLetters(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, onRedis, sandbox.Faults{}, refuseExternalIDFilter)
	ctx := context.Background()
	for i := range 250 {
		if _, _, err := e.acs.Links.Create(ctx, &acs.LinkCreate{Title: acs.Ptr(fmt.Sprint("older ", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.sb.SetFaults(sandbox.Faults{CommitThenFail: 1, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	p := e.publisher(func(o *publish.Options) {
		o.API = publish.NewACS(e.acs, publish.WithScanPages(2))
		o.MaxUnresolved = 3
	})
	items := stories("big", 1)
	e.accept(p, "big", items, publish.FeedOptions{InitialItems: 10})
	e.runUntilEmpty(p, 20*time.Second)

	if got := e.sb.ItemsByExternalID(items[0].ExternalID); len(got) != 1 {
		t.Errorf("%d copies on the service; want 1 (the first POST, never repeated)", len(got))
	}
	if n := e.log.count(http.MethodPost, "/v3/story"); n != 1 {
		t.Errorf("%d POSTs; want 1: an item that cannot be looked up is not posted blind", n)
	}
	dl, err := p.DeadLetters(ctx)
	if err != nil || len(dl) != 1 {
		t.Fatalf("dead letters = %+v, %v; want 1", dl, err)
	}
	const why = "cannot verify whether it exists: external_id not searchable and content too large to scan"
	if !strings.Contains(dl[0].Reason, why) || dl[0].Attempts != 4 {
		t.Errorf("dead letter %+v; want reason %q after 4 attempts (the POST, then 3 look-ups)", dl[0], why)
	}
}

// TestConflictGoesToDeadLetters: a service that answers every POST with a
// 409 while the look-up by external_id finds nothing. After MaxUnresolved
// such answers in a row the item is dead-lettered with the API's reason
// instead of retried forever.
func TestConflictGoesToDeadLetters(t *testing.T) {
	t.Parallel()
	conflict := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == "/v3/story" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusConflict)
				fmt.Fprint(w, `{"error":{"status":409,"message":"an item with this external_id is being imported"}}`)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	e := newEnvWith(t, onRedis, sandbox.Faults{}, conflict)
	p := e.publisher(func(o *publish.Options) { o.MaxUnresolved = 3 })
	items := stories("clash", 1)
	e.accept(p, "clash", items, publish.FeedOptions{InitialItems: 10})
	e.runUntilEmpty(p, 20*time.Second)

	dl, err := p.DeadLetters(context.Background())
	if err != nil || len(dl) != 1 {
		t.Fatalf("dead letters = %+v, %v; want 1", dl, err)
	}
	if d := dl[0]; d.Status != http.StatusConflict || !strings.Contains(d.Reason, "being imported") || d.Attempts != 3 {
		t.Errorf("dead letter %+v; want status 409 with the API's reason after 3 attempts", d)
	}
	if n := e.log.count(http.MethodPost, "/v3/story"); n != 3 {
		t.Errorf("%d POSTs; want 3", n)
	}
	if n := e.log.count(http.MethodGet, "/v3/content"); n != 3 {
		t.Errorf("%d look-ups; want 3 (the feed's first sight, then before each POST after the first)", n)
	}
}
