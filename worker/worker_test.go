package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/feeds"
	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/internal/syncbuf"
	"github.com/feedworker/feedworker/sandbox"
)

const testSecret = "s3cr3t-never-in-logs-7f1c"

// env is a sandbox with the test secret, a feed farm and a config for them.
type env struct {
	sb      *sandbox.Server
	sbURL   string
	farm    *feedfarm.Farm
	farmURL string
	dir     string
}

func newEnv(t *testing.T, feeds, items int) *env {
	t.Helper()
	sb, err := sandbox.New(sandbox.Options{ClientSecret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	ss := httptest.NewServer(sb)
	t.Cleanup(ss.Close)
	farm := feedfarm.New(feedfarm.Options{Feeds: feeds, Items: items, Seed: 1})
	fs := httptest.NewServer(farm)
	t.Cleanup(fs.Close)
	return &env{sb: sb, sbURL: ss.URL, farm: farm, farmURL: fs.URL, dir: t.TempDir()}
}

// config returns a loaded config for the env's feeds; extra is appended to
// the YAML's top level (it may override sections by repeating nothing).
func (e *env) config(t *testing.T, secret, redisURL string) *config.Config {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `api:
  base_url: %s
  token_url: %s/oauth/token
  client_id: sandbox
  client_secret: %s
redis:
  url: %q
store:
  path: %s
admin:
  listen: ""
defaults:
  initial_items: 100
  categories: [Farm]
  create_categories: true
feeds:
`, e.sbURL, e.sbURL, secret, redisURL, filepath.Join(e.dir, "store.db"))
	n := 0
	for _, g := range e.farm.GUIDs() {
		if strings.HasSuffix(g, ":0") {
			fmt.Fprintf(&b, "  - id: farm-%d\n    url: %s\n", n, feedfarm.URL(e.farmURL, n))
			n++
		}
	}
	path := filepath.Join(e.dir, "config.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path, "test")
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

func newWorker(t *testing.T, cfg *config.Config, o Options) *Worker {
	t.Helper()
	o.Config = cfg
	o.Version = "test"
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w, err := New(t.Context(), o)
	if err != nil {
		t.Fatalf("worker.New: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func TestOncePublishesEveryItemOnce(t *testing.T) {
	e := newEnv(t, 3, 4)
	var out bytes.Buffer
	w := newWorker(t, e.config(t, testSecret, ""), Options{Out: &out})

	s, err := w.Once(t.Context())
	if err != nil {
		t.Fatalf("Once: %v", err)
	}
	if got := len(e.sb.AllContent()); got != 12 {
		t.Fatalf("sandbox holds %d items after one pass, want 12", got)
	}
	if s.Published["story"] != 12 || s.Polled != 3 || s.Failed != 0 {
		t.Errorf("summary = %+v, want 12 stories from 3 polls", s)
	}
	for _, want := range []string{"3 polls", "12 stories"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed summary lacks %q:\n%s", want, out.String())
		}
	}
	for _, it := range e.sb.AllContent() {
		if !strings.Contains(string(it.JSON), `"categories":[{`) {
			t.Errorf("item %d has no category: %s", it.ID, it.JSON)
			break
		}
	}

	// A second pass finds nothing new (the farm answers 304).
	if _, err := w.Once(t.Context()); err != nil {
		t.Fatalf("second Once: %v", err)
	}
	if got := len(e.sb.AllContent()); got != 12 {
		t.Errorf("sandbox holds %d items after a second pass, want still 12", got)
	}
	if e.farm.NotModified() != 3 {
		t.Errorf("farm answered %d 304s on the second pass, want 3", e.farm.NotModified())
	}

	// An edit at the source is PUT once; nothing is posted again.
	e.farm.Edit(0.25)
	if _, err := w.Once(t.Context()); err != nil {
		t.Fatalf("third Once: %v", err)
	}
	if got := len(e.sb.AllContent()); got != 12 {
		t.Errorf("sandbox holds %d items after an edit, want still 12", got)
	}
	edited := 0
	for _, it := range e.sb.AllContent() {
		if strings.Contains(it.Title, "(edit 1)") {
			edited++
		}
	}
	if edited != 3 {
		t.Errorf("%d items carry the edited title on the API, want 3", edited)
	}
}

// describing counts the registrations of every metric name registered
// through it.
type describing struct {
	prometheus.Registerer
	mu    sync.Mutex
	names map[string]int
}

func (d *describing) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	re := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	var names []string
	for desc := range ch {
		if m := re.FindStringSubmatch(desc.String()); m != nil {
			names = append(names, m[1])
		}
	}
	if err := d.Registerer.Register(c); err != nil {
		return err
	}
	d.mu.Lock()
	for _, n := range names {
		d.names[n]++
	}
	d.mu.Unlock()
	return nil
}

func (d *describing) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := d.Register(c); err != nil {
			panic(err)
		}
	}
}

func TestMetricsArePedanticAndMatchTheDashboard(t *testing.T) {
	e := newEnv(t, 2, 3)
	reg := prometheus.NewPedanticRegistry()
	rec := &describing{Registerer: reg, names: map[string]int{}}
	w := newWorker(t, e.config(t, testSecret, ""), Options{Registry: reg, Registerer: rec})
	if _, err := w.Once(t.Context()); err != nil {
		t.Fatalf("Once: %v", err)
	}
	// The pedantic registry checks every metric's consistency on Gather.
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("gather: %v", err)
	}
	// Every collector is registered once: feedworker_items_total used to
	// be defined by both the worker and the publisher.
	for name, n := range rec.names {
		if n != 1 {
			t.Errorf("%s registered %d times, want once", name, n)
		}
	}
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"feedworker_items_total", []string{"farm-0", "new"}, 3},
		{"feedworker_polls_total", []string{"farm-1", "ok"}, 1},
	}
	for _, c := range checks {
		var got float64
		switch c.name {
		case "feedworker_items_total":
			got = gatheredValue(t, reg, c.name, map[string]string{"feed": c.labels[0], "outcome": c.labels[1]})
		default:
			got = gatheredValue(t, reg, c.name, map[string]string{"feed": c.labels[0], "result": c.labels[1]})
		}
		if got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(w.metrics.apiDuration); n == 0 {
		t.Error("no API request was observed by the client hook")
	}
	if got := gatheredValue(t, reg, "feedworker_build_info", map[string]string{"version": "test"}); got != 1 {
		t.Errorf("feedworker_build_info{version=test} = %v, want 1", got)
	}

	// Every feedworker_* name the dashboard and alerts use is one the worker
	// registers.
	for _, file := range []string{"../deploy/grafana/dashboards/feedworker.json", "../deploy/prometheus/alerts.yml"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		used := regexp.MustCompile(`feedworker_[a-z_]+`).FindAllString(string(b), -1)
		slices.Sort(used)
		for _, name := range slices.Compact(used) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
			if rec.names[base] == 0 {
				t.Errorf("%s uses %s, which the worker does not export", file, name)
			}
		}
	}
}

func gatheredValue(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for k, v := range labels {
				if label(m, k) != v {
					continue next
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

func TestReadyzNamesEachFailingCheck(t *testing.T) {
	e := newEnv(t, 1, 1)
	cases := []struct {
		name     string
		secret   string
		redis    string
		wantCode int
		want     string
	}{
		{"ready", testSecret, "", http.StatusOK, "ready"},
		{"api token refused", "wrong-secret", "", http.StatusServiceUnavailable, "api:"},
		{"store unreachable", testSecret, "redis://127.0.0.1:1/0", http.StatusServiceUnavailable, "store:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorker(t, e.config(t, c.secret, c.redis), Options{})
			srv := httptest.NewServer(w.admin().Handler())
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.wantCode || !strings.Contains(string(body), c.want) {
				t.Errorf("readyz = %d %q, want %d containing %q", resp.StatusCode, body, c.wantCode, c.want)
			}
			if strings.Contains(string(body), "wrong-secret") || strings.Contains(string(body), testSecret) {
				t.Errorf("readyz shows a secret: %q", body)
			}
			if c.wantCode == http.StatusOK {
				return
			}
			// The other checks pass: only the failing one is named.
			for _, other := range []string{"config:", "store:", "api:"} {
				if other != c.want && strings.Contains(string(body), other) {
					t.Errorf("readyz names %s although it passes: %q", other, body)
				}
			}
		})
	}
}

func TestStatusPageAndJSON(t *testing.T) {
	e := newEnv(t, 2, 2)
	w := newWorker(t, e.config(t, testSecret, ""), Options{})
	if _, err := w.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w.admin().Handler())
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("status page Content-Type = %q", ct)
	}
	for _, want := range []string{`<table id="feeds">`, `data-feed="farm-0"`, `data-feed="farm-1"`, feedfarm.URL(e.farmURL, 1), ">ok<"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	if strings.Contains(string(page), "<script") {
		t.Error("status page carries a script")
	}

	resp, err = http.Get(srv.URL + "/status.json")
	if err != nil {
		t.Fatal(err)
	}
	var st Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(st.Feeds) != 2 || st.Feeds[0].LastResult != "ok" || st.Feeds[0].Published != 2 || st.Feeds[0].LastPoll == nil {
		t.Errorf("status.json feeds = %+v", st.Feeds)
	}
	// The pacing: the ceiling is api.rate_limit (unset here), the circuit
	// closed, and the page says so.
	if st.Pacing == nil || st.Pacing.Gate != "closed" || st.Pacing.Ceiling != w.cfg.API.RateLimit || st.Pacing.Limited != 0 {
		t.Errorf("status.json pacing = %+v; want the pacer's state with a closed circuit", st.Pacing)
	}
	for _, want := range []string{`id="pacing"`, "circuit"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("status page lacks %q", want)
		}
	}
}

func TestSecretsNeverLogged(t *testing.T) {
	e := newEnv(t, 1, 2)
	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// A wrong secret makes the token fetch fail, so errors about the API are
	// logged; the secret must appear in none of them.
	wrong := "wrong-" + testSecret
	cfg := e.config(t, wrong, "")
	// A feed URL with a password and a token in its query string.
	cfg.Feeds[0].URL = strings.Replace(cfg.Feeds[0].URL, "http://", "http://reader:"+testSecret+"@", 1) + "?token=" + testSecret
	w := newWorker(t, cfg, Options{Logger: logger})
	_, _ = w.Once(context.Background())
	srv := httptest.NewServer(w.admin().Handler())
	defer srv.Close()
	var pages []string
	for _, p := range []string{"/metrics", "/status.json", "/", "/readyz"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		pages = append(pages, string(b))
	}
	if !strings.Contains(logs.String(), "level=WARN") && !strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("no failure was logged; the test proves nothing:\n%s", logs)
	}
	if !strings.Contains(pages[1], "farm-0") {
		t.Fatalf("status.json does not list the feed; the URL check proves nothing:\n%s", pages[1])
	}
	for _, text := range append(pages, logs.String(), fmt.Sprint(w.config()), fmt.Sprintf("%+v", w.config().API)) {
		if strings.Contains(text, testSecret) {
			t.Errorf("a secret leaked into:\n%.2000s", text)
		}
	}
}

// TestHandleSurvivesAPanic makes handling a fetched feed panic (the
// publisher is taken away, standing in for whatever a future bug does): the
// poll fails with an error naming the feed, and the process goes on.
func TestHandleSurvivesAPanic(t *testing.T) {
	e := newEnv(t, 1, 1)
	cfg := e.config(t, testSecret, "")
	w := newWorker(t, cfg, Options{})
	fetcher, err := feeds.NewFetcher(cfg.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	res, err := fetcher.Fetch(t.Context(), feedfarm.URL(e.farmURL, 0), feeds.Validators{})
	if err != nil {
		t.Fatal(err)
	}
	pub := w.pub
	w.pub = nil
	defer func() { w.pub = pub }()
	err = w.Handle(t.Context(), cfg.Feeds[0], res) // panics inside; must return an error
	if err == nil || !strings.Contains(err.Error(), "farm-0") || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("Handle = %v, want an error naming the feed and the panic", err)
	}
}

// TestHandleGivesTheMapSlotBackOnAPanic: mapping is limited to GOMAXPROCS
// documents at once; a panic while mapping (recovered by Handle) must give
// its slot back, or a few bad documents would stop every later poll.
func TestHandleGivesTheMapSlotBackOnAPanic(t *testing.T) {
	e := newEnv(t, 1, 1)
	cfg := e.config(t, testSecret, "")
	w := newWorker(t, cfg, Options{})
	fetcher, err := feeds.NewFetcher(cfg.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	fetch := func() *feeds.Result {
		res, err := fetcher.Fetch(t.Context(), feedfarm.URL(e.farmURL, 0), feeds.Validators{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	now := w.now
	w.now = func() time.Time { panic("a mapping no test foresaw") }
	for range cap(w.mapSlots) + 1 {
		if err := w.Handle(ctx, cfg.Feeds[0], fetch()); err == nil || !strings.Contains(err.Error(), "panicked") {
			t.Fatalf("Handle = %v, want the panic as an error (a map slot kept by an earlier panic?)", err)
		}
	}
	w.now = now
	if err := w.Handle(ctx, cfg.Feeds[0], fetch()); err != nil {
		t.Fatalf("Handle after %d panics = %v; want the feed mapped (a map slot kept by a panic?)", cap(w.mapSlots)+1, err)
	}
}
