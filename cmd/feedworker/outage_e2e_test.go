package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/sandbox"
)

// outageRedisPort is this test's own redis-server (it freezes and stops
// it); the shared machine gives this range to the store-outage work.
const outageRedisPort = 6531

// The bounds (issue 22): what a user checks, with polling
// deadlines well beyond them only for the waits in between.
const (
	resumeBound = 30 * time.Second // every waiting item on the API after recovery
	adminBound  = time.Second      // /, /status.json, /readyz answer
	stopBound   = 10 * time.Second // SIGTERM to exit
	// outageLogBound is the most WARN and ERROR lines one outage may
	// write, whatever the number of feeds: the outage line, and the few
	// operations in flight when it began.
	outageLogBound = 12
)

// TestStoreOutages runs a worker on a Redis with append-only persistence
// while the farm's feeds change, freezes Redis (SIGSTOP) for a while, then
// later stops it and starts it again on its append-only file. Each time:
// no feed is fetched while the store is down, the outage writes a handful
// of WARN/ERROR lines however many feeds there are, the admin endpoints
// keep answering within a second (/readyz 503 naming the store), and
// every item is on the API within 30 s of recovery, exactly once.
func TestStoreOutages(t *testing.T) {
	srv := dedupetest.StartServerOn(t, outageRedisPort)
	const feeds = 40
	e := newE2E(t, feedfarm.Options{Feeds: feeds, Items: 5, Seed: 22}, sandbox.Faults{})
	e.redisURL = "redis://" + srv.Addr() + "/0"
	e.redisYAML = "  url: " + e.redisURL + "\n  timeout: 1s\n"
	admin := freeAddr(t)
	cfg := e.config("outage", admin)
	// Real TTLs: an item claimed before the outage and forgotten would
	// wait the claim TTL (5m), far past the resume bound.
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("claim_ttl: 2s\n  lease_ttl: 1s\n"), []byte("claim_ttl: 5m\n  lease_ttl: 1m\n"), 1)
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(e.dir, "outage.log")
	cmd := e.start("outage", "run", "--config", cfg)

	served := map[string]bool{}
	var servedMu sync.Mutex
	noteServed := func() {
		servedMu.Lock()
		defer servedMu.Unlock()
		for _, g := range e.farm.GUIDs() {
			served[g] = true
		}
	}
	noteServed()
	allOnAPI := func() bool {
		servedMu.Lock()
		defer servedMu.Unlock()
		return distinctOnAPI(e.sb) >= len(served)
	}
	waitFor(t, 90*time.Second, "the first items on the API", allOnAPI)

	probe := startAdminProbe(t, admin)
	defer probe.stop()

	round := uint64(1)
	change := func() {
		e.farm.Change(0.5, round)
		round++
		noteServed()
	}
	storeUp := func() float64 { return scrapeGauge(t, "http://"+admin+"/metrics", "feedworker_store_up") }

	outage := func(name string, down, up func()) {
		t.Helper()
		change()
		time.Sleep(time.Second) // the worker polls the change
		logStart := fileSize(t, logPath)
		down()
		waitFor(t, 30*time.Second, name+": feedworker_store_up 0", func() bool { return storeUp() == 0 })
		// Polls already under way when the store went down may still
		// fetch; nothing starts after.
		time.Sleep(500 * time.Millisecond)
		fetchesAtDown := e.farm.Requests()
		change() // the feeds change while the store is down
		waitFor(t, 10*time.Second, name+": /readyz 503 naming the store", func() bool {
			code, body := readyz(admin)
			return code == http.StatusServiceUnavailable && strings.Contains(body, "store: ")
		})
		// The console answers from the last known state, marked stale,
		// naming the store.
		var st struct {
			Stale        bool   `json:"stale"`
			StoreProblem string `json:"store_problem"`
			Feeds        []any  `json:"feeds"`
		}
		resp, err := http.Get("http://" + admin + "/status.json")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil || !st.Stale || !strings.Contains(st.StoreProblem, "redis") || len(st.Feeds) != feeds {
			t.Errorf("%s: /status.json while the store is down: stale %v, store_problem %q, %d feeds (%v); want stale, naming redis, %d feeds",
				name, st.Stale, st.StoreProblem, len(st.Feeds), err, feeds)
		} else {
			t.Logf("%s: /status.json: stale, %s", name, st.StoreProblem)
		}
		time.Sleep(4 * time.Second)
		if n := e.farm.Requests() - fetchesAtDown; n != 0 {
			t.Errorf("%s: %d feed requests while the store was down; want none", name, n)
		}
		up()
		back := time.Now()
		deadline := back.Add(resumeBound)
		for !allOnAPI() && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		servedMu.Lock()
		want := len(served)
		servedMu.Unlock()
		got := distinctOnAPI(e.sb)
		if got < want {
			t.Errorf("%s: %d of %d items on the API %s after recovery; want all", name, got, want, resumeBound)
		} else {
			t.Logf("%s: every item (%d) on the API %s after recovery", name, want, time.Since(back).Round(10*time.Millisecond))
		}
		waitFor(t, 10*time.Second, name+": feedworker_store_up 1", func() bool { return storeUp() == 1 })
		lines := warnLines(t, logPath, logStart)
		if len(lines) > outageLogBound {
			t.Errorf("%s: %d WARN/ERROR lines for one outage of a %d-feed worker; want at most %d:\n%s",
				name, len(lines), feeds, outageLogBound, strings.Join(lines, "\n"))
		} else {
			t.Logf("%s: %d WARN/ERROR lines:\n%s", name, len(lines), strings.Join(lines, "\n"))
		}
	}

	outage("freeze", srv.Freeze, srv.Thaw)
	time.Sleep(2 * time.Second)
	outage("restart", srv.Stop, srv.Start)

	probe.stop()
	stopAt := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("worker after SIGTERM: %v", err)
		}
		t.Logf("SIGTERM to exit: %s", time.Since(stopAt).Round(10*time.Millisecond))
	case <-time.After(stopBound):
		t.Errorf("the worker did not exit within %s of SIGTERM", stopBound)
	}
	probe.check(t)
	servedMu.Lock()
	want := len(served)
	servedMu.Unlock()
	e.assertExactlyOnce(want)
}

// distinctOnAPI counts the distinct external ids on the sandbox.
func distinctOnAPI(sb *sandbox.Server) int {
	ids := map[string]bool{}
	for _, it := range sb.AllContent() {
		ids[it.ExternalID] = true
	}
	return len(ids)
}

// adminProbe asks the console's endpoints over and over and keeps the
// slowest answer of each.
type adminProbe struct {
	mu      sync.Mutex
	slowest map[string]time.Duration
	failed  []string
	asked   int
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

func startAdminProbe(t *testing.T, addr string) *adminProbe {
	p := &adminProbe{slowest: map[string]time.Duration{}, done: make(chan struct{})}
	hc := &http.Client{Timeout: 10 * time.Second}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			for _, path := range []string{"/", "/status.json", "/readyz"} {
				start := time.Now()
				resp, err := hc.Get("http://" + addr + path)
				took := time.Since(start)
				p.mu.Lock()
				p.asked++
				p.slowest[path] = max(p.slowest[path], took)
				if err != nil {
					p.failed = append(p.failed, fmt.Sprintf("%s: %v", path, err))
				} else {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					// /readyz answers 503 while the store is down; the
					// pages answer 200, stale.
					if path != "/readyz" && resp.StatusCode != http.StatusOK {
						p.failed = append(p.failed, fmt.Sprintf("%s: %s", path, resp.Status))
					}
				}
				p.mu.Unlock()
			}
			select {
			case <-p.done:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return p
}

func (p *adminProbe) stop() {
	p.once.Do(func() { close(p.done) })
	p.wg.Wait()
}

func (p *adminProbe) check(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Logf("admin endpoints asked %d times; slowest answers %v", p.asked, p.slowest)
	for path, d := range p.slowest {
		if d > adminBound {
			t.Errorf("%s took %s once; want every answer within %s", path, d, adminBound)
		}
	}
	if len(p.failed) > 0 {
		t.Errorf("admin endpoints failed %d times, first: %s", len(p.failed), p.failed[0])
	}
}

// scrapeGauge reads an unlabelled gauge from /metrics (-1 when unreadable).
func scrapeGauge(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var v float64
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			if _, err := fmt.Sscan(f[1], &v); err == nil {
				return v
			}
		}
	}
	return -1
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// warnLines are the WARN and ERROR lines of a log from offset on.
func warnLines(t *testing.T, path string, offset int64) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b[offset:]), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			out = append(out, l)
		}
	}
	return out
}
