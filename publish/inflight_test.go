package publish_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/transform"
)

// slowAPI commits its first POST only after 2.5 s, whether or not the
// client still waits (as a real service finishes what it started), and
// refuses the second POST with a 429.
type slowAPI struct {
	mu      sync.Mutex
	created map[string][]int64
	next    int64
	posts   atomic.Int32
}

func (a *slowAPI) Create(ctx context.Context, p *transform.Payload) (int64, error) {
	n := a.posts.Add(1)
	if n == 2 {
		return 0, &acs.Error{Method: "POST", Route: "/v3/story", Status: 429, RetryAfter: 700 * time.Millisecond}
	}
	delay := 10 * time.Millisecond
	if n == 1 {
		delay = 2500 * time.Millisecond
	}
	done := make(chan int64, 1)
	go func() {
		time.Sleep(delay)
		a.mu.Lock()
		a.next++
		id := a.next
		a.created[p.ExternalID] = append(a.created[p.ExternalID], id)
		a.mu.Unlock()
		done <- id
	}()
	select {
	case id := <-done:
		return id, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (a *slowAPI) Update(context.Context, int64, *transform.Payload) error { return nil }

func (a *slowAPI) Delete(context.Context, string, int64) error { return nil }

func (a *slowAPI) Find(_ context.Context, ext string) (publish.Found, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ids := a.created[ext]; len(ids) > 0 {
		return publish.Found{ID: ids[0], Type: "story"}, nil
	}
	return publish.Found{}, nil
}

func (a *slowAPI) Categories(context.Context) ([]publish.Category, error) { return nil, nil }

func (a *slowAPI) CreateCategory(context.Context, string) (publish.Category, error) {
	return publish.Category{}, errors.New("not needed")
}

// TestPostStillInFlight: the first POST times out on the client while the
// service goes on and commits it later. The retry must not look the item
// up before a send could have finished (it would find nothing and post
// again), and a later POST refused with a 429 must not clear the mark the
// first one left. The service ends with one item.
func TestPostStillInFlight(t *testing.T) {
	c, prefix := dedupetest.Redis(t)
	st := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
	api := &slowAPI{created: map[string][]int64{}}
	p, err := publish.New(publish.Options{Store: st, API: api, Workers: 1, ClaimTTL: 2 * time.Second,
		SendTimeout: time.Second, BaseBackoff: 50 * time.Millisecond, MaxBackoff: time.Second, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pl := transform.Payload{Type: "story", FeedID: "f", ExternalID: "fw1-x", Title: "t", Hash: "h1"}
	if _, err := p.Accept(t.Context(), "f", []transform.Payload{pl}, dedupe.Validators{}, publish.FeedOptions{InitialItems: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { _ = p.Run(ctx); close(done) }()
	<-done
	time.Sleep(100 * time.Millisecond)
	api.mu.Lock()
	defer api.mu.Unlock()
	if got := api.created["fw1-x"]; len(got) != 1 {
		t.Errorf("the service holds %d items (%v) after %d POSTs, want exactly 1", len(got), got, api.posts.Load())
	}
	if r, ok, err := st.Record(t.Context(), dedupe.Key{FeedID: "f", ExternalID: "fw1-x"}); err != nil || !ok || r.ContentID != 1 {
		t.Errorf("record = %+v, %v, %v; want content id 1 recorded", r, ok, err)
	}
}
