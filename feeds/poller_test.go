package feeds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/internal/syncbuf"
)

// testHandler is an in-memory stand-in for the worker: Handle "stores" the
// validators like the durable outbox would.
type testHandler struct {
	mu        sync.Mutex
	store     map[string]Validators
	loads     map[string]int
	handled   map[string]int
	ctxErrs   []error
	loadErr   error
	handleErr func(feedID string, call int) error
	onHandle  func()
}

func newTestHandler() *testHandler {
	return &testHandler{store: map[string]Validators{}, loads: map[string]int{}, handled: map[string]int{}}
}

func (h *testHandler) Validators(ctx context.Context, feedID string) (Validators, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.loads[feedID]++
	if h.loadErr != nil {
		return Validators{}, h.loadErr
	}
	return h.store[feedID], nil
}

func (h *testHandler) Handle(ctx context.Context, feed config.Feed, res *Result) error {
	if h.onHandle != nil {
		h.onHandle()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.handled[feed.ID]++
	h.ctxErrs = append(h.ctxErrs, ctx.Err())
	if h.handleErr != nil {
		if err := h.handleErr(feed.ID, h.handled[feed.ID]); err != nil {
			return err
		}
	}
	h.store[feed.ID] = res.Validators
	// As the worker does once it has mapped them: the poller's counts of
	// items (ItemsHandled, PollRecord.Items) must survive it.
	res.ReleaseItems()
	return nil
}

func (h *testHandler) get(m map[string]int, id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return m[id]
}

// feedServer serves test feeds and records each request's If-None-Match.
type feedServer struct {
	*httptest.Server
	mu  sync.Mutex
	inm map[string][]string
}

func newFeedServer(t *testing.T, serve func(w http.ResponseWriter, r *http.Request, n int)) *feedServer {
	t.Helper()
	s := &feedServer{inm: map[string][]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.inm[r.URL.Path] = append(s.inm[r.URL.Path], r.Header.Get("If-None-Match"))
		n := len(s.inm[r.URL.Path])
		s.mu.Unlock()
		serve(w, r, n)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *feedServer) sent(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.inm[path]...)
}

func (s *feedServer) count(path string) int { return len(s.sent(path)) }

// etagFeed answers 304 when the client has the path's ETag, else the feed.
func etagFeed(w http.ResponseWriter, r *http.Request, _ int) {
	etag := `"etag-` + r.URL.Path + `"`
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("ETag", etag)
	serveFeed(w, testRSS)
}

type testPoller struct {
	*Poller
	reg  *prometheus.Registry
	logs *syncbuf.Buffer
}

func newTestPoller(t *testing.T, h config.HTTP, handler Handler, owner Owner) *testPoller {
	t.Helper()
	if h.MinInterval == 0 {
		h.MinInterval = config.Duration(time.Millisecond)
	}
	if h.Timeout == 0 {
		h.Timeout = config.Duration(5 * time.Second)
	}
	reg := prometheus.NewPedanticRegistry()
	logs := &syncbuf.Buffer{}
	p, err := NewPoller(PollerOptions{
		HTTP:       h,
		Handler:    handler,
		Owner:      owner,
		Logger:     slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Registerer: reg,
		Grace:      2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := reg.Gather(); err != nil {
			t.Errorf("pedantic registry: %v", err)
		}
	})
	return &testPoller{Poller: p, reg: reg, logs: logs}
}

// run starts Run and returns a function that stops it and waits for it.
func (p *testPoller) run(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Error("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func (p *testPoller) status(t *testing.T, id string) FeedStatus {
	t.Helper()
	for _, st := range p.Snapshot() {
		if st.ID == id {
			return st
		}
	}
	t.Fatalf("feed %s not in the snapshot", id)
	return FeedStatus{}
}

func testFeed(id, url string, interval time.Duration) config.Feed {
	f := config.Feed{ID: id, URL: url}
	if interval > 0 {
		f.Interval = dur(interval)
	}
	return f
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func pollOne(t *testing.T, p *testPoller) PollResult {
	t.Helper()
	res := p.PollAll(t.Context())
	if len(res) != 1 {
		t.Fatalf("PollAll returned %d results, want 1", len(res))
	}
	return res[0]
}

func TestPollerConditionalGetCycle(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, etagFeed)
	h := newTestHandler()
	h.store["a"] = Validators{ETag: `"stale"`}
	p := newTestPoller(t, config.HTTP{}, h, nil)
	p.Update([]config.Feed{testFeed("a", srv.URL+"/a", time.Hour)})

	if r := pollOne(t, p); r.Class != ClassOK || r.Err != nil {
		t.Fatalf("first poll: %+v", r)
	}
	if r := pollOne(t, p); r.Class != ClassNotModified || r.Err != nil {
		t.Fatalf("second poll: %+v", r)
	}
	if diff := cmp.Diff([]string{`"stale"`, `"etag-/a"`}, srv.sent("/a")); diff != "" {
		t.Errorf("If-None-Match sent (-want +got):\n%s", diff)
	}
	if h.get(h.loads, "a") != 1 || h.get(h.handled, "a") != 1 {
		t.Errorf("Validators called %d times, Handle %d times; want 1 and 1", h.get(h.loads, "a"), h.get(h.handled, "a"))
	}
	st := p.status(t, "a")
	if st.LastResult != ClassNotModified || st.Failures != 0 || st.ItemsHandled != 2 || st.LastError != "" ||
		st.LastSuccess.IsZero() || time.Until(st.NextPoll) < 50*time.Minute {
		t.Errorf("status = %+v", st)
	}
	m := p.metrics
	if got := testutil.ToFloat64(m.polls.WithLabelValues("a", ClassOK)); got != 1 {
		t.Errorf("polls_total{ok} = %v", got)
	}
	if got := testutil.ToFloat64(m.polls.WithLabelValues("a", ClassNotModified)); got != 1 {
		t.Errorf("polls_total{not_modified} = %v", got)
	}
	if got := testutil.ToFloat64(m.bytes.WithLabelValues("a")); got != float64(len(testRSS)) {
		t.Errorf("fetched_bytes_total = %v, want %d", got, len(testRSS))
	}
	if got := testutil.ToFloat64(m.lastSuccess.WithLabelValues("a")); got < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last_successful_poll_timestamp_seconds = %v", got)
	}
	if got := testutil.ToFloat64(m.configured); got != 1 {
		t.Errorf("feeds_configured = %v", got)
	}
	if n := testutil.CollectAndCount(m.duration); n != 2 {
		t.Errorf("fetch_duration_seconds has %d series, want 2 (ok, not_modified)", n)
	}
}

func TestPollerHandlerErrorKeepsValidators(t *testing.T) {
	t.Parallel()
	// Every answer is new content with a new ETag.
	srv := newFeedServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, n))
		serveFeed(w, testRSS)
	})
	h := newTestHandler()
	h.handleErr = func(_ string, call int) error {
		if call == 2 {
			return errors.New("outbox unavailable")
		}
		return nil
	}
	p := newTestPoller(t, config.HTTP{}, h, nil)
	p.Update([]config.Feed{testFeed("a", srv.URL+"/a", time.Hour)})

	pollOne(t, p)
	r := pollOne(t, p)
	var he *HandlerError
	if r.Class != ClassStore || !errors.As(r.Err, &he) || !strings.Contains(r.Err.Error(), "outbox unavailable") {
		t.Fatalf("poll with failing handler: %+v", r)
	}
	if st := p.status(t, "a"); st.Failures != 1 || st.LastResult != ClassStore {
		t.Errorf("status after handler error = %+v", st)
	}
	pollOne(t, p)
	pollOne(t, p)
	// Request 3 must still send v1: v2 was never made durable.
	if diff := cmp.Diff([]string{"", `"v1"`, `"v1"`, `"v3"`}, srv.sent("/a")); diff != "" {
		t.Errorf("If-None-Match sent (-want +got):\n%s", diff)
	}
	if got := h.get(h.loads, "a"); got != 2 {
		t.Errorf("Validators loaded %d times, want 2 (start, after the handler error)", got)
	}
	if st := p.status(t, "a"); st.Failures != 0 || st.LastResult != ClassOK {
		t.Errorf("status after recovery = %+v", st)
	}
	if got := testutil.ToFloat64(p.metrics.polls.WithLabelValues("a", ClassStore)); got != 1 {
		t.Errorf("polls_total{error_store} = %v", got)
	}
	if !strings.Contains(p.logs.String(), "level=ERROR") {
		t.Errorf("no error logged for the handler failure:\n%s", p.logs)
	}
}

func TestPollerFailedFetchKeepsValidators(t *testing.T) {
	t.Parallel()
	bad := map[string]func(w http.ResponseWriter){
		"mid-body": func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", strconv.Itoa(len(testRSS)))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(testRSS[:40]))
			w.(http.Flusher).Flush()
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		},
		"parse error": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html><body>maintenance</body></html>"))
		},
		"too large": func(w http.ResponseWriter) {
			_, _ = w.Write(bytes.Repeat([]byte(" "), 70<<10))
		},
	}
	for name, serveBad := range bad {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newFeedServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, n))
				if n == 2 {
					serveBad(w)
					return
				}
				serveFeed(w, testRSS)
			})
			h := newTestHandler()
			p := newTestPoller(t, config.HTTP{MaxBodySize: 64 << 10}, h, nil)
			p.Update([]config.Feed{testFeed("a", srv.URL+"/a", time.Hour)})
			pollOne(t, p)
			if r := pollOne(t, p); r.Err == nil || r.Class == ClassStore {
				t.Fatalf("bad poll: %+v", r)
			}
			pollOne(t, p)
			if diff := cmp.Diff([]string{"", `"v1"`, `"v1"`}, srv.sent("/a")); diff != "" {
				t.Errorf("If-None-Match sent (-want +got):\n%s", diff)
			}
			if h.get(h.handled, "a") != 2 || h.get(h.loads, "a") != 1 {
				t.Errorf("Handle called %d times (want 2), Validators %d (want 1)", h.get(h.handled, "a"), h.get(h.loads, "a"))
			}
		})
	}
}

func TestPollerValidatorsLoadError(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, etagFeed)
	h := newTestHandler()
	h.loadErr = errors.New("redis down")
	p := newTestPoller(t, config.HTTP{}, h, nil)
	p.Update([]config.Feed{testFeed("a", srv.URL+"/a", time.Hour)})
	r := pollOne(t, p)
	if r.Class != ClassStore || !strings.Contains(r.Err.Error(), "redis down") {
		t.Fatalf("poll = %+v", r)
	}
	if srv.count("/a") != 0 {
		t.Error("fetched without knowing the validators")
	}
	h.mu.Lock()
	h.loadErr = nil
	h.mu.Unlock()
	if r := pollOne(t, p); r.Class != ClassOK {
		t.Fatalf("poll after recovery = %+v", r)
	}
	if got := h.get(h.loads, "a"); got != 2 {
		t.Errorf("Validators called %d times, want 2", got)
	}
}

func TestPollerGoneStopsPolling(t *testing.T) {
	t.Parallel()
	var gone atomic.Bool
	gone.Store(true)
	srv := newFeedServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if gone.Load() {
			w.WriteHeader(http.StatusGone)
			return
		}
		serveFeed(w, testRSS)
	})
	h := newTestHandler()
	p := newTestPoller(t, config.HTTP{}, h, nil)
	feeds := []config.Feed{testFeed("g", srv.URL+"/g", 20*time.Millisecond)}
	p.Update(feeds)
	p.run(t)

	waitFor(t, "the feed to be marked gone", func() bool { return p.status(t, "g").Gone })
	// A reload with the same config does not revive it.
	p.Update([]config.Feed{testFeed("g", srv.URL+"/g", 20*time.Millisecond)})
	time.Sleep(200 * time.Millisecond) // ten intervals
	if n := srv.count("/g"); n != 1 {
		t.Errorf("gone feed requested %d times, want 1", n)
	}
	st := p.status(t, "g")
	if !st.NextPoll.IsZero() || st.LastResult != ClassGone {
		t.Errorf("gone status = %+v", st)
	}
	if got := testutil.ToFloat64(p.metrics.gone); got != 1 {
		t.Errorf("feeds_gone = %v", got)
	}
	if !strings.Contains(p.logs.String(), "gone") {
		t.Errorf("gone not logged:\n%s", p.logs)
	}

	// Changing its config brings it back.
	gone.Store(false)
	p.Update([]config.Feed{testFeed("g", srv.URL+"/g", 30*time.Millisecond)})
	waitFor(t, "the revived feed to be polled", func() bool { return p.status(t, "g").LastResult == ClassOK })
	if p.status(t, "g").Gone || testutil.ToFloat64(p.metrics.gone) != 0 {
		t.Errorf("feed still gone after a config change: %+v", p.status(t, "g"))
	}
}

func TestPollerReload(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, etagFeed)
	h := newTestHandler()
	p := newTestPoller(t, config.HTTP{}, h, nil)
	p.Update([]config.Feed{
		testFeed("a", srv.URL+"/a", time.Hour),
		testFeed("b", srv.URL+"/b-old", time.Hour),
		testFeed("d", srv.URL+"/d", 20*time.Millisecond),
		testFeed("e", srv.URL+"/e", time.Hour),
	})
	for _, r := range p.PollAll(t.Context()) {
		if r.Class != ClassOK {
			t.Fatalf("initial poll: %+v", r)
		}
	}
	p.run(t)
	waitFor(t, "d to be polled by Run", func() bool { return srv.count("/d") >= 2 })

	p.Update([]config.Feed{
		testFeed("a", srv.URL+"/a", time.Hour),               // unchanged
		testFeed("b", srv.URL+"/b-new", 20*time.Millisecond), // new URL
		testFeed("c", srv.URL+"/c", 20*time.Millisecond),     // added
		testFeed("e", srv.URL+"/e", 20*time.Millisecond),     // new interval, same URL
		// d removed
	})
	dAtRemoval := srv.count("/d")
	waitFor(t, "b, c and e to be polled after the reload", func() bool {
		return srv.count("/b-new") >= 1 && srv.count("/c") >= 1 && srv.count("/e") >= 2
	})
	time.Sleep(100 * time.Millisecond)

	if got := srv.sent("/b-new")[0]; got != "" {
		t.Errorf("new URL of b sent If-None-Match %q; the old URL's validators must be dropped", got)
	}
	if got := srv.sent("/e")[1]; got != `"etag-/e"` {
		t.Errorf("e (interval changed) sent If-None-Match %q, want its kept validators", got)
	}
	if got := srv.sent("/c")[0]; got != "" {
		t.Errorf("added feed c sent If-None-Match %q", got)
	}
	for id, want := range map[string]int{"a": 1, "b": 1, "c": 1, "e": 1} {
		if got := h.get(h.loads, id); got != want {
			t.Errorf("Validators(%s) called %d times, want %d", id, got, want)
		}
	}
	if n := srv.count("/a"); n != 1 {
		t.Errorf("unchanged feed a requested %d times, want 1 (its next poll is an hour away)", n)
	}
	if n := srv.count("/b-old"); n != 1 {
		t.Errorf("old URL of b requested %d times after the reload", n)
	}
	if n := srv.count("/d"); n > dAtRemoval+1 {
		t.Errorf("removed feed d requested %d times, %d at removal (one may have been in flight)", n, dAtRemoval)
	}
	var ids []string
	for _, st := range p.Snapshot() {
		ids = append(ids, st.ID)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "e"}, ids); diff != "" {
		t.Errorf("snapshot ids (-want +got):\n%s", diff)
	}
	if time.Until(p.status(t, "a").NextPoll) < 50*time.Minute {
		t.Errorf("a was rescheduled: next poll %v", p.status(t, "a").NextPoll)
	}
	families, err := p.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "feed" && l.GetValue() == "d" {
					t.Errorf("%s still has a series for removed feed d", mf.GetName())
				}
			}
		}
	}
	if got := testutil.ToFloat64(p.metrics.configured); got != 4 {
		t.Errorf("feeds_configured = %v, want 4", got)
	}
}

func TestPollerURLChangeAfterHandlerError(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("ETag", fmt.Sprintf(`"%s-%d"`, r.URL.Path, n))
		serveFeed(w, testRSS)
	})
	h := newTestHandler()
	p := newTestPoller(t, config.HTTP{}, h, nil)
	p.Update([]config.Feed{testFeed("a", srv.URL+"/old", time.Hour)})
	pollOne(t, p)
	p.Update([]config.Feed{testFeed("a", srv.URL+"/new", time.Hour)})
	h.mu.Lock()
	h.handleErr = func(string, int) error { return errors.New("store down") }
	h.mu.Unlock()
	pollOne(t, p)
	h.mu.Lock()
	h.handleErr = nil
	h.mu.Unlock()
	pollOne(t, p)
	// The store still holds the old URL's validators: they must not be sent
	// to the new URL even after a handler error.
	if diff := cmp.Diff([]string{"", ""}, srv.sent("/new")); diff != "" {
		t.Errorf("If-None-Match to the new URL (-want +got):\n%s", diff)
	}
}

// concurrencyServer counts requests in flight, per server and overall.
type concurrencyServer struct {
	*httptest.Server
	cur, max atomic.Int64
}

func TestPollerConcurrencyLimits(t *testing.T) {
	t.Parallel()
	const maxConc, perHost, hosts, feedsPerHost = 5, 2, 3, 4
	var global, globalMax atomic.Int64
	gate := make(chan struct{})
	var gateOnce sync.Once
	newServer := func(hold bool) *concurrencyServer {
		s := &concurrencyServer{}
		s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g := global.Add(1)
			c := s.cur.Add(1)
			defer func() { s.cur.Add(-1); global.Add(-1) }()
			for v := globalMax.Load(); g > v && !globalMax.CompareAndSwap(v, g); v = globalMax.Load() {
			}
			for v := s.max.Load(); c > v && !s.max.CompareAndSwap(v, c); v = s.max.Load() {
			}
			if g == maxConc {
				gateOnce.Do(func() { close(gate) })
			}
			if hold {
				// Hold every request until the limit is reached, so the test
				// shows the limit is both used and respected.
				select {
				case <-gate:
				case <-time.After(3 * time.Second):
				}
			} else {
				time.Sleep(5 * time.Millisecond)
			}
			etagFeed(w, r, 0)
		}))
		t.Cleanup(s.Close)
		return s
	}
	check := func(t *testing.T, servers []*concurrencyServer, wantGlobalMax bool) {
		t.Helper()
		if g := globalMax.Load(); g > maxConc || (wantGlobalMax && g != maxConc) {
			t.Errorf("at most %d fetches were in flight at once, limit %d", g, maxConc)
		}
		for i, s := range servers {
			if m := s.max.Load(); m > perHost {
				t.Errorf("host %d had %d fetches in flight, per-host limit %d", i, m, perHost)
			}
		}
	}
	setup := func(t *testing.T, hold bool, interval time.Duration) (*testPoller, []*concurrencyServer) {
		var servers []*concurrencyServer
		var feeds []config.Feed
		for i := range hosts {
			s := newServer(hold)
			servers = append(servers, s)
			for j := range feedsPerHost {
				feeds = append(feeds, testFeed(fmt.Sprintf("h%d-f%d", i, j), fmt.Sprintf("%s/f%d", s.URL, j), interval))
			}
		}
		p := newTestPoller(t, config.HTTP{MaxConcurrency: maxConc, PerHostConcurrency: perHost}, newTestHandler(), nil)
		p.Update(feeds)
		return p, servers
	}

	t.Run("PollAll", func(t *testing.T) {
		p, servers := setup(t, true, time.Hour)
		results := p.PollAll(t.Context())
		if len(results) != hosts*feedsPerHost {
			t.Fatalf("%d results", len(results))
		}
		for _, r := range results {
			if r.Class != ClassOK {
				t.Errorf("%s: %+v", r.FeedID, r)
			}
		}
		check(t, servers, true)
	})
	t.Run("Run", func(t *testing.T) {
		globalMax.Store(0)
		p, servers := setup(t, false, 10*time.Millisecond)
		stop := p.run(t)
		// Wait until every feed was polled (a loaded machine is slow to
		// get there), then some more polls while the limits are watched.
		polled := func() (n int) {
			for _, st := range p.Snapshot() {
				if st.LastResult != "" {
					n++
				}
			}
			return n
		}
		deadline := time.Now().Add(30 * time.Second)
		for polled() < hosts*feedsPerHost && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond) // more polls of every feed; the limits hold whatever their number
		stop()
		if total := polled(); total != hosts*feedsPerHost {
			t.Errorf("%d of %d feeds were polled in 30s", total, hosts*feedsPerHost)
		}
		check(t, servers, false)
	})
}

func TestPollerGracefulShutdown(t *testing.T) {
	t.Parallel()
	t.Run("in-flight poll finishes", func(t *testing.T) {
		t.Parallel()
		started := make(chan struct{})
		var startOnce sync.Once
		srv := newFeedServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			if r.URL.Path == "/slow" {
				startOnce.Do(func() { close(started) })
				time.Sleep(300 * time.Millisecond)
			}
			serveFeed(w, testRSS)
		})
		h := newTestHandler()
		p := newTestPoller(t, config.HTTP{}, h, nil)
		p.Update([]config.Feed{
			testFeed("slow", srv.URL+"/slow", 10*time.Millisecond),
			testFeed("busy", srv.URL+"/busy", 10*time.Millisecond),
		})
		stop := p.run(t)
		<-started
		stop()
		if got := h.get(h.handled, "slow"); got != 1 {
			t.Fatalf("Run returned before the in-flight poll was handled (%d)", got)
		}
		h.mu.Lock()
		for _, err := range h.ctxErrs {
			if err != nil {
				t.Errorf("Handle ran with a cancelled context: %v", err)
			}
		}
		h.mu.Unlock()
		busy := srv.count("/busy")
		time.Sleep(100 * time.Millisecond)
		if srv.count("/busy") != busy || srv.count("/slow") != 1 {
			t.Errorf("polls started after shutdown")
		}
	})
	t.Run("grace expires", func(t *testing.T) {
		t.Parallel()
		started := make(chan struct{})
		var startOnce sync.Once
		srv := newFeedServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			startOnce.Do(func() { close(started) })
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		})
		reg := prometheus.NewPedanticRegistry()
		p, err := NewPoller(PollerOptions{
			HTTP:       config.HTTP{MinInterval: config.Duration(time.Millisecond), Timeout: config.Duration(10 * time.Second)},
			Handler:    newTestHandler(),
			Registerer: reg,
			Grace:      100 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		p.Update([]config.Feed{testFeed("hang", srv.URL+"/hang", 10*time.Millisecond)})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { _ = p.Run(ctx); close(done) }()
		<-started
		begin := time.Now()
		cancel()
		select {
		case <-done:
		case <-time.After(4 * time.Second):
			t.Fatal("Run did not return after the grace period")
		}
		if d := time.Since(begin); d < 100*time.Millisecond {
			t.Errorf("Run returned after %v, before the 100ms grace", d)
		}
		if st := p.Snapshot()[0]; st.LastResult != ClassTimeout {
			t.Errorf("cut-off poll recorded as %+v, want %s", st, ClassTimeout)
		}
	})
}

type testOwner struct {
	mu  sync.Mutex
	own map[string]bool
}

func (o *testOwner) Own(ctx context.Context, feedID string) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.own[feedID], nil
}

func (o *testOwner) set(id string, v bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.own[id] = v
}

func TestPollerOwner(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, etagFeed)
	h := newTestHandler()
	owner := &testOwner{own: map[string]bool{"a": true}}
	p := newTestPoller(t, config.HTTP{}, h, owner)
	p.Update([]config.Feed{testFeed("a", srv.URL+"/a", time.Hour), testFeed("b", srv.URL+"/b", time.Hour)})

	res := p.PollAll(t.Context())
	if res[0].Class != ClassOK || !res[1].Skipped {
		t.Fatalf("results = %+v", res)
	}
	if srv.count("/b") != 0 || !p.status(t, "b").NotOwned {
		t.Errorf("feed b owned by another replica was polled: %+v", p.status(t, "b"))
	}
	// a's lease is lost, then regained: its validators are re-read, since
	// the other replica may have moved them on.
	owner.set("a", false)
	owner.set("b", true)
	p.PollAll(t.Context())
	owner.set("a", true)
	p.PollAll(t.Context())
	if srv.count("/b") != 2 || h.get(h.loads, "b") != 1 {
		t.Errorf("b after gaining ownership: %d requests, %d loads", srv.count("/b"), h.get(h.loads, "b"))
	}
	if got := h.get(h.loads, "a"); got != 2 {
		t.Errorf("a's validators loaded %d times, want 2 (start, after regaining the lease)", got)
	}
}

func TestPollerDisabledFeeds(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, etagFeed)
	p := newTestPoller(t, config.HTTP{}, newTestHandler(), nil)
	off := false
	disabled := testFeed("off", srv.URL+"/off", 10*time.Millisecond)
	disabled.Enabled = &off
	p.Update([]config.Feed{testFeed("on", srv.URL+"/on", 10*time.Millisecond), disabled})
	if got := testutil.ToFloat64(p.metrics.configured); got != 1 {
		t.Errorf("feeds_configured = %v, want 1 (enabled feeds)", got)
	}
	res := p.PollAll(t.Context())
	if len(res) != 1 || res[0].FeedID != "on" {
		t.Errorf("PollAll = %+v, want only the enabled feed", res)
	}
	p.run(t)
	waitFor(t, "the enabled feed to be polled by Run", func() bool { return srv.count("/on") >= 3 })
	if n := srv.count("/off"); n != 0 {
		t.Errorf("disabled feed requested %d times", n)
	}
	if st := p.status(t, "off"); st.Enabled || !st.NextPoll.IsZero() {
		t.Errorf("disabled status = %+v", st)
	}
	on := true
	disabled.Enabled = &on
	p.Update([]config.Feed{testFeed("on", srv.URL+"/on", 10*time.Millisecond), disabled})
	waitFor(t, "the re-enabled feed to be polled", func() bool { return srv.count("/off") >= 1 })
}

func TestPollerMovedAndRateLimited(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.URL.Path {
		case "/old":
			http.Redirect(w, r, "/new", http.StatusMovedPermanently)
		case "/limited":
			w.Header().Set("Retry-After", "7200")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			etagFeed(w, r, n)
		}
	})
	p := newTestPoller(t, config.HTTP{}, newTestHandler(), nil)
	p.Update([]config.Feed{testFeed("moved", srv.URL+"/old", 0), testFeed("limited", srv.URL+"/limited", 0)})
	p.PollAll(t.Context())

	st := p.status(t, "moved")
	if st.MovedTo != srv.URL+"/new" || st.URL != srv.URL+"/old" || st.LastResult != ClassOK {
		t.Errorf("moved status = %+v", st)
	}
	if got := testutil.ToFloat64(p.metrics.moved); got != 1 {
		t.Errorf("feeds_moved = %v", got)
	}
	logs := p.logs.String()
	if !strings.Contains(logs, "level=WARN msg=\"feed warning\" feed=moved warning=moved") || !strings.Contains(logs, "moved permanently to "+srv.URL+"/new") {
		t.Errorf("permanent redirect not logged as a feed warning:\n%s", logs)
	}

	st = p.status(t, "limited")
	if st.LastResult != ClassRateLimited || st.Failures != 1 || time.Until(st.NextPoll) < 2*time.Hour-time.Minute {
		t.Errorf("rate-limited status = %+v, want the next poll 2h away", st)
	}
	if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "feed=limited") {
		t.Errorf("rate limiting not logged as a warning:\n%s", logs)
	}
}

func TestNewPollerAndRun(t *testing.T) {
	t.Parallel()
	if _, err := NewPoller(PollerOptions{}); err == nil {
		t.Error("NewPoller without a handler succeeded")
	}
	reg := prometheus.NewPedanticRegistry()
	if _, err := NewPoller(PollerOptions{Handler: newTestHandler(), Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewPoller(PollerOptions{Handler: newTestHandler(), Registerer: reg}); err == nil {
		t.Error("registering the poll metrics twice succeeded")
	}
	p := newTestPoller(t, config.HTTP{}, newTestHandler(), nil)
	p.Update([]config.Feed{testFeed("x", "http://127.0.0.1:1/x", time.Hour), testFeed("x", "http://127.0.0.1:1/y", time.Hour)})
	if st := p.Snapshot(); len(st) != 1 || st[0].URL != "http://127.0.0.1:1/x" {
		t.Errorf("duplicate ids: snapshot %+v, want the first only", st)
	}
	p.run(t)
	waitFor(t, "Run to start", func() bool { return p.running.Load() })
	if err := p.Run(t.Context()); err == nil {
		t.Error("a second Run succeeded")
	}
}

func TestPollerHonoursHints(t *testing.T) {
	t.Parallel()
	ttlFeed := strings.Replace(testRSS, "<link>", "<ttl>120</ttl><link>", 1)
	srv := newFeedServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch {
		case r.URL.Path == "/max-age":
			w.Header().Set("Cache-Control", "max-age=10800")
			serveFeed(w, testRSS)
		case r.Header.Get("If-None-Match") == `"t"`:
			w.WriteHeader(http.StatusNotModified) // no caching headers at all
		default:
			w.Header().Set("ETag", `"t"`)
			serveFeed(w, ttlFeed)
		}
	})
	p := newTestPoller(t, config.HTTP{}, newTestHandler(), nil)
	p.Update([]config.Feed{testFeed("ttl", srv.URL+"/ttl", 15*time.Minute), testFeed("max-age", srv.URL+"/max-age", 15*time.Minute)})
	for round := range 2 {
		p.PollAll(t.Context())
		if next := time.Until(p.status(t, "ttl").NextPoll); next < 2*time.Hour-time.Minute || next > 2*time.Hour*11/10 {
			t.Errorf("round %d (%s): ttl 120m, interval 15m: next poll in %v", round, p.status(t, "ttl").LastResult, next)
		}
		if next := time.Until(p.status(t, "max-age").NextPoll); next < 3*time.Hour-time.Minute {
			t.Errorf("round %d: max-age 3h, interval 15m: next poll in %v", round, next)
		}
	}
	if got := p.status(t, "ttl").LastResult; got != ClassNotModified {
		t.Errorf("second round was %q, want a 304", got)
	}
}
