package publish_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
	"github.com/feedworker/feedworker/transform"
)

// faultyAPI is the real API (over the sandbox) with one fault on the first
// call of a kind: before calling through, the first Create or Categories
// runs its hook, which may stall or answer for the service.
type faultyAPI struct {
	publish.API
	mu         sync.Mutex
	creates    int
	categories int
	// onFirstCreate, when set, runs instead of the first Create, which
	// then does not reach the service when it returns an error.
	onFirstCreate func(ctx context.Context) error
	// onFirstCategories, when set, runs before the first Categories.
	onFirstCategories func(ctx context.Context)
}

func (a *faultyAPI) Create(ctx context.Context, p *transform.Payload) (int64, error) {
	a.mu.Lock()
	a.creates++
	first := a.creates == 1
	a.mu.Unlock()
	if first && a.onFirstCreate != nil {
		if err := a.onFirstCreate(ctx); err != nil {
			return 0, err
		}
	}
	return a.API.Create(ctx, p)
}

func (a *faultyAPI) Categories(ctx context.Context) ([]publish.Category, error) {
	a.mu.Lock()
	a.categories++
	first := a.categories == 1
	a.mu.Unlock()
	if first && a.onFirstCategories != nil {
		a.onFirstCategories(ctx)
	}
	return a.API.Categories(ctx)
}

// running runs p until the test ends (or stop is called).
func running(t *testing.T, p *publish.Publisher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// waitEmpty waits until the outbox is empty.
func (e *env) waitEmpty(timeout time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st, err := e.store.Stats(context.Background(), time.Now())
		if err == nil && st.Outbox == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("outbox not empty after %v: %+v, %v", timeout, st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClaimLapseTwoPublishers: the first of two publishers on one Redis
// prefix claims two items and then stalls past its short ClaimTTL before
// sending the second (the API's Retry-After, or a first send that hangs
// while the second item waits for the one sender). The second publisher
// takes the lapsed item and posts it; the first must not post it too.
func TestClaimLapseTwoPublishers(t *testing.T) {
	const ttl = time.Second
	tests := []struct {
		name  string
		fault func(stalled chan<- struct{}) *faultyAPI
	}{
		{"retry-after longer than the claim", func(stalled chan<- struct{}) *faultyAPI {
			return &faultyAPI{onFirstCreate: func(context.Context) error {
				close(stalled)
				return &acs.Error{Method: http.MethodPost, Route: "/v3/story", Status: http.StatusTooManyRequests,
					Message: "slow down", RetryAfter: 3 * ttl}
			}}
		}},
		{"a send that hangs", func(stalled chan<- struct{}) *faultyAPI {
			return &faultyAPI{onFirstCreate: func(ctx context.Context) error {
				close(stalled)
				// A transport that ignores its context: the send hangs
				// past both its timeout and the other item's claim.
				time.Sleep(3 * ttl)
				return ctx.Err()
			}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, onRedis, sandbox.Faults{})
			stalled := make(chan struct{})
			api := tc.fault(stalled)
			api.API = e.api
			first := e.publisher(func(o *publish.Options) {
				o.API, o.Owner, o.Workers = api, "first", 1
				o.ClaimTTL, o.MaxBackoff = ttl, 5*ttl
			})
			second := e.publisher(func(o *publish.Options) {
				o.Owner, o.Workers, o.ClaimTTL = "second", 1, ttl
			})
			items := stories("lapse", 2)
			e.accept(first, "lapse", items, publish.FeedOptions{InitialItems: 10})
			running(t, first)
			<-stalled
			running(t, second)
			e.waitEmpty(20 * time.Second)
			// Let the first publisher come back from its stall and do
			// whatever it would do.
			time.Sleep(3*ttl + 500*time.Millisecond)
			e.waitEmpty(20 * time.Second)
			e.exactlyOnce(items)
			if n := e.log.count(http.MethodPost, "/v3/story"); n != 2 {
				t.Errorf("%d POSTs for 2 items; want 2", n)
			}
		})
	}
}

// TestClaimLostBeforeSend: a claim lost while its holder resolves
// categories (here Redis drops the key, as an eviction or a failover
// would, and another publisher claims and posts the item) is noticed by
// the check right before the send: the first publisher drops the item.
func TestClaimLostBeforeSend(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{})
	ctx := context.Background()
	if _, _, err := e.acs.Categories.Create(ctx, &acs.CategoryCreate{Description: "News"}); err != nil {
		t.Fatal(err)
	}
	inPrepare, resume := make(chan struct{}), make(chan struct{})
	api := &faultyAPI{API: e.api, onFirstCategories: func(ctx context.Context) {
		close(inPrepare)
		select {
		case <-resume:
		case <-ctx.Done():
		}
	}}
	first := e.publisher(func(o *publish.Options) { o.API, o.Owner, o.Workers = api, "first", 1 })
	second := e.publisher(func(o *publish.Options) { o.Owner, o.Workers = "second", 1 })
	items := stories("lost", 1)
	items[0].CategoryNames = []string{"News"}
	items[0] = rehash(items[0])
	e.accept(first, "lost", items, publish.FeedOptions{InitialItems: 10})
	stopFirst := running(t, first)
	<-inPrepare
	start := time.Now()
	member := dedupe.Key{FeedID: "lost", ExternalID: items[0].ExternalID}.String()
	if err := e.redis.Del(ctx, e.prefix+"claim:"+member).Err(); err != nil {
		t.Fatal(err)
	}
	stopSecond := running(t, second)
	e.waitEmpty(20 * time.Second)
	stopSecond()
	// A stall well past the publisher's "just checked" window.
	time.Sleep(time.Until(start.Add(time.Second)))
	close(resume)
	// Stopping waits for the send in flight (the shutdown's grace): the
	// first publisher has done all it would with the item.
	stopFirst()
	e.exactlyOnce(items)
	if n := e.log.count(http.MethodPost, "/v3/story"); n != 1 {
		t.Errorf("%d POSTs; want 1, by the claim's new holder", n)
	}
	if r, ok, err := e.store.Record(ctx, dedupe.Key{FeedID: "lost", ExternalID: items[0].ExternalID}); err != nil || !ok || r.ContentID == 0 || r.PendingHash != "" {
		t.Errorf("record = %+v, %v, %v; want delivered, not pending", r, ok, err)
	}
}

// TestRetryAfterCapped: an item waits no longer than MaxBackoff for its
// next attempt, whatever Retry-After the service sent.
func TestRetryAfterCapped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{})
	api := &faultyAPI{API: e.api, onFirstCreate: func(context.Context) error {
		return &acs.Error{Method: http.MethodPost, Route: "/v3/story", Status: http.StatusTooManyRequests, RetryAfter: 24 * time.Hour}
	}}
	p := e.publisher(func(o *publish.Options) { o.API, o.MaxBackoff = api, 300*time.Millisecond })
	e.accept(p, "capped", stories("capped", 1), publish.FeedOptions{InitialItems: 10})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = p.Drain(ctx) // the process-wide pause outlasts this drain
	st, err := e.store.Stats(context.Background(), time.Now().Add(time.Second))
	if err != nil || st.Outbox != 1 || st.Due != 1 {
		t.Errorf("stats a second later = %+v, %v; want the item due again (within MaxBackoff, not a day)", st, err)
	}
}
