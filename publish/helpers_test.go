package publish_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
	"github.com/feedworker/feedworker/transform"
)

// env is one test's world: a real sandbox behind httptest, an acs client
// on it, and a store.
type env struct {
	t     testing.TB
	sb    *sandbox.Server
	srv   *httptest.Server
	acs   *acs.Client
	api   publish.API
	store dedupe.Store
	rt    *dedupe.RoundTripCounter // nil on bbolt
	log   *reqLog
	// redis and prefix are the store's client and key prefix (nil and ""
	// on bbolt), for tests that play another worker or a Redis fault.
	redis  *redis.Client
	prefix string
}

// reqLog records every /v3 request with its start and end times, for the
// rate-limit assertions (the sandbox's own log has no times).
type reqLog struct {
	mu   sync.Mutex
	reqs []logged
	// started, when set, receives a value when a request starts.
	started chan string
}

type logged struct {
	method, path string
	start, end   time.Time
	status       int
	retryAfter   string
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (l *reqLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v3/") {
			h.ServeHTTP(w, r)
			return
		}
		l.mu.Lock()
		ch := l.started
		l.mu.Unlock()
		if ch != nil {
			select {
			case ch <- r.Method + " " + r.URL.Path:
			default:
			}
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		h.ServeHTTP(rec, r)
		l.mu.Lock()
		l.reqs = append(l.reqs, logged{r.Method, r.URL.Path, start, time.Now(), rec.status, rec.Header().Get("Retry-After")})
		l.mu.Unlock()
	})
}

func (l *reqLog) all() []logged {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]logged(nil), l.reqs...)
}

// count counts requests by method whose path starts with prefix.
func (l *reqLog) count(method, prefix string) int {
	n := 0
	for _, r := range l.all() {
		if r.method == method && strings.HasPrefix(r.path, prefix) {
			n++
		}
	}
	return n
}

type storeKind int

const (
	onRedis storeKind = iota
	onBolt
)

func (k storeKind) String() string { return [...]string{"redis", "bolt"}[k] }

func newEnv(t testing.TB, kind storeKind, faults sandbox.Faults) *env {
	t.Helper()
	return newEnvWith(t, kind, faults, nil)
}

// newEnvWith is newEnv with mw (when not nil) in front of the sandbox, to
// play a server that differs from it (refuses a filter, answers 409).
func newEnvWith(t testing.TB, kind storeKind, faults sandbox.Faults, mw func(http.Handler) http.Handler) *env {
	t.Helper()
	e := &env{t: t, log: &reqLog{}}
	switch kind {
	case onRedis:
		c, prefix := dedupetest.Redis(t)
		e.rt = &dedupe.RoundTripCounter{}
		c.AddHook(e.rt)
		e.redis, e.prefix = c, prefix
		e.store = dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
	case onBolt:
		s, err := dedupe.OpenBolt(filepath.Join(t.TempDir(), "store.db"), dedupe.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		e.store = s
	}
	e.startSandboxWith(faults, mw)
	return e
}

func (e *env) startSandbox(faults sandbox.Faults) {
	e.t.Helper()
	e.startSandboxWith(faults, nil)
}

func (e *env) startSandboxWith(faults sandbox.Faults, mw func(http.Handler) http.Handler) {
	e.t.Helper()
	sb, err := sandbox.New(sandbox.Options{Faults: faults})
	if err != nil {
		e.t.Fatal(err)
	}
	e.sb = sb
	var h http.Handler = sb
	if mw != nil {
		h = mw(sb)
	}
	e.srv = httptest.NewServer(e.log.wrap(h))
	e.t.Cleanup(e.srv.Close)
	creds := acs.ClientCredentials{TokenURL: acs.TokenURL(e.srv.URL), ClientID: sandbox.DefaultClientID, ClientSecret: sandbox.DefaultClientSecret}
	// Short client-side retries: the publisher owns the real retry policy.
	e.acs, err = acs.NewClient(e.srv.URL, creds.HTTPClient(nil),
		acs.WithRetryPolicy(acs.RetryPolicy{MaxAttempts: 2, BaseDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond}))
	if err != nil {
		e.t.Fatal(err)
	}
	e.api = publish.NewACS(e.acs)
}

// publisher returns a publisher with test-friendly timings, adjusted by
// tweak.
func (e *env) publisher(tweak func(*publish.Options)) *publish.Publisher {
	e.t.Helper()
	o := publish.Options{
		Store:         e.store,
		API:           e.api,
		Logger:        slog.New(slog.NewTextHandler(e.t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		Registerer:    prometheus.NewPedanticRegistry(),
		Workers:       4,
		ClaimTTL:      10 * time.Second,
		SendTimeout:   3 * time.Second,
		ShutdownGrace: 5 * time.Second,
		BaseBackoff:   20 * time.Millisecond,
		MaxBackoff:    200 * time.Millisecond,
		PollInterval:  20 * time.Millisecond,
	}
	if tweak != nil {
		tweak(&o)
	}
	p, err := publish.New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// runUntilEmpty runs p until the outbox is empty (delivered or dead), or
// fails the test after timeout.
func (e *env) runUntilEmpty(p *publish.Publisher, timeout time.Duration) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("Run: %v", err)
		}
	}()
	deadline := time.Now().Add(timeout)
	for {
		st, err := p.Stats(context.Background())
		if err == nil && st.Outbox == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("outbox not empty after %v: %+v, %v", timeout, st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) accept(p *publish.Publisher, feed string, items []transform.Payload, o publish.FeedOptions) publish.Counts {
	e.t.Helper()
	c, err := p.Accept(context.Background(), feed, items, dedupe.Validators{ETag: fmt.Sprintf(`"%d"`, time.Now().UnixNano())}, o)
	if err != nil {
		e.t.Fatalf("Accept(%s): %v", feed, err)
	}
	return c
}

// exactlyOnce checks that the sandbox holds each item exactly once, with
// its current title, and nothing else.
func (e *env) exactlyOnce(items ...[]transform.Payload) {
	e.t.Helper()
	want := map[string]string{}
	for _, list := range items {
		for _, it := range list {
			want[it.ExternalID] = it.Title
		}
	}
	got := map[string][]string{}
	for _, it := range e.sb.AllContent() {
		got[it.ExternalID] = append(got[it.ExternalID], it.Title)
	}
	for ext, title := range want {
		switch titles := got[ext]; {
		case len(titles) == 0:
			e.t.Errorf("%s: missing on the service", ext)
		case len(titles) > 1:
			e.t.Errorf("%s: %d copies on the service; want 1", ext, len(titles))
		case titles[0] != title:
			e.t.Errorf("%s: title %q on the service; want %q", ext, titles[0], title)
		}
	}
	for ext := range got {
		if _, ok := want[ext]; !ok {
			e.t.Errorf("%s: on the service but never accepted", ext)
		}
	}
}

// story builds a payload with a stable hash over what it carries.
func story(feed string, i int, title string, published time.Time) transform.Payload {
	p := transform.Payload{
		Type:        transform.TypeStory,
		FeedID:      feed,
		ExternalID:  fmt.Sprintf("fw1-%s-%03d", feed, i),
		Title:       title,
		Summary:     "summary of " + title,
		ExternalURL: fmt.Sprintf("https://example.com/%s/%d", feed, i),
		PublishDate: published,
	}
	return rehash(p)
}

// rehash recomputes the test payload's hash after a change.
func rehash(p transform.Payload) transform.Payload {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s|%s|%s|%v|%v|%v|%v|%v", p.Type, p.Title, p.Summary, p.PublishDate.Unix(),
		p.CategoryNames, p.CategoryIDs, p.Segments, p.Event != nil))
	p.Hash = hex.EncodeToString(sum[:])
	return p
}

var day0 = time.Date(2026, 2, 1, 8, 0, 0, 0, time.UTC)

func stories(feed string, n int) []transform.Payload {
	out := make([]transform.Payload, n)
	for i := range n {
		// Newest first, as feeds list them.
		out[i] = story(feed, i, fmt.Sprintf("%s item %d", feed, i), day0.Add(time.Duration(n-i)*time.Hour))
	}
	return out
}

// redisServer is a private redis-server with a store on it.
type redisServer struct {
	*dedupetest.Server
	store dedupe.Store
}

func dedupeServer(t testing.TB) *redisServer {
	t.Helper()
	s := dedupetest.StartServer(t)
	st := dedupe.NewRedis(redis.NewClient(s.Options()), dedupe.RedisOptions{})
	t.Cleanup(func() { st.Close() })
	return &redisServer{Server: s, store: st}
}

// storeOpsTimed is how many store calls feedworker_store_operation_duration_seconds
// timed, by op.
func storeOpsTimed(t *testing.T, reg prometheus.Gatherer) map[string]uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	observed := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "feedworker_store_operation_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "op" {
					observed[lp.GetValue()] = m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return observed
}

// runUntilPosts starts p.Run and returns once n story POSTs have reached
// the service (e.log.started must be made first); cancel stops Run and
// done gives its error.
func (e *env) runUntilPosts(p *publish.Publisher, n int) (cancel context.CancelFunc, done <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	d := make(chan error, 1)
	go func() { d <- p.Run(ctx) }()
	posts := 0
	for r := range e.log.started {
		if strings.HasPrefix(r, "POST /v3/story") {
			if posts++; posts == n {
				break
			}
		}
	}
	return cancel, d
}
