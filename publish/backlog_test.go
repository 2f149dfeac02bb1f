package publish_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
)

// tokenGate lets a story POST through only with a token from its channel,
// so a test decides how many deliveries have happened.
func tokenGate(tokens <-chan struct{}) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == "/v3/story" {
				select {
				case <-tokens:
				case <-r.Context().Done():
					http.Error(w, "gave up", http.StatusServiceUnavailable)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// TestBacklogHoldsPollingBack: with publish.max_backlog 5 and 10 items of
// one feed queued, the next feed's items are queued only once deliveries
// have brought this worker's backlog down to 5, so the outbox never holds
// a whole pass; everything is then delivered once.
func TestBacklogHoldsPollingBack(t *testing.T) {
	for _, kind := range []storeKind{onRedis, onBolt} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			tokens := make(chan struct{})
			e := newEnvWith(t, kind, sandbox.Faults{}, tokenGate(tokens))
			reg := prometheus.NewPedanticRegistry()
			p := e.publisher(func(o *publish.Options) { o.MaxBacklog, o.Workers, o.Registerer = 5, 2, reg })
			ctx, cancel := context.WithCancel(t.Context())
			ran := make(chan error, 1)
			go func() { ran <- p.Run(ctx) }()
			opts := publish.FeedOptions{InitialItems: 100}
			a, b := stories("a", 10), stories("b", 10)
			e.accept(p, "a", a, opts)     // the backlog was empty: no wait
			deliverOne(t, e, tokens, "a") // Run is delivering: 9 to go

			accepted := make(chan int, 1)
			go func() {
				e.accept(p, "b", b, opts)
				accepted <- delivered(e, "a")
			}()
			var atAccept int
		feed:
			for {
				select {
				case tokens <- struct{}{}:
				case atAccept = <-accepted:
					break feed
				case <-time.After(time.Minute):
					t.Fatal("feed b not accepted after a minute of deliveries")
				}
			}
			if atAccept < 5 {
				t.Errorf("feed b queued when %d of feed a's 10 items were delivered; want at least 5 (max_backlog 5)", atAccept)
			}
			if n := metricValue(t, reg, "feedworker_backlog_waits_total", nil); n != 1 {
				t.Errorf("feedworker_backlog_waits_total = %v, want 1", n)
			}
			close(tokens) // everything else goes through
			deadline := time.Now().Add(time.Minute)
			for delivered(e, "a")+delivered(e, "b") < 20 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			if err := <-ran; err != nil {
				t.Fatal(err)
			}
			e.exactlyOnce(a, b)
		})
	}
}

// TestBacklogGivesUpWhenNothingIsDelivered: when no delivery finishes (the
// API stalls), Accept stops waiting after a while rather than holding
// polling for good, and the items are delivered once the API is back.
func TestBacklogGivesUpWhenNothingIsDelivered(t *testing.T) {
	t.Parallel()
	tokens := make(chan struct{})
	e := newEnvWith(t, onBolt, sandbox.Faults{}, tokenGate(tokens))
	reg := prometheus.NewPedanticRegistry()
	p := e.publisher(func(o *publish.Options) { o.MaxBacklog, o.Registerer = 2, reg })
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()
	opts := publish.FeedOptions{InitialItems: 100}
	a, b, c := stories("a", 5), stories("b", 5), stories("c", 5)
	e.accept(p, "a", a, opts)
	deliverOne(t, e, tokens, "a") // Run is delivering: 4 to go
	e.accept(p, "b", b, opts)     // waits, gives up: nothing is delivered
	e.accept(p, "c", c, opts)     // stalled: no wait until a delivery finishes
	if n := metricValue(t, reg, "feedworker_backlog_waits_total", nil); n != 1 {
		t.Errorf("feedworker_backlog_waits_total = %v, want 1 (feed b)", n)
	}
	close(tokens)
	deadline := time.Now().Add(time.Minute)
	for delivered(e, "a")+delivered(e, "b")+delivered(e, "c") < 15 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	e.exactlyOnce(a, b, c)
}

// deliverOne lets one story POST through and waits until the sandbox
// holds one more item of feed.
func deliverOne(t *testing.T, e *env, tokens chan<- struct{}, feed string) {
	t.Helper()
	before := delivered(e, feed)
	select {
	case tokens <- struct{}{}:
	case <-time.After(time.Minute):
		t.Fatal("no delivery asked for a token within a minute")
	}
	deadline := time.Now().Add(time.Minute)
	for delivered(e, feed) == before {
		if time.Now().After(deadline) {
			t.Fatal("the delivery let through did not land within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// delivered counts the items of feed the sandbox holds.
func delivered(e *env, feed string) int {
	n := 0
	for _, it := range e.sb.AllContent() {
		if strings.HasPrefix(it.ExternalID, "fw1-"+feed+"-") {
			n++
		}
	}
	return n
}
