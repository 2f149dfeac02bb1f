package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/sandbox"
)

// stateFeeds serves the feeds of TestPollStateAcrossRestarts and records
// when each path was requested.
type stateFeeds struct {
	mu   sync.Mutex
	hits map[string][]time.Time
	// news is how many items the /news feed has.
	news int
}

func (s *stateFeeds) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.hits[path])
}

func (s *stateFeeds) times(path string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.hits[path]...)
}

func (s *stateFeeds) addNews(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.news += n
}

const stateRetryAfter = 120 // seconds: far beyond the test's restarts

func rss(items ...string) string {
	return `<?xml version="1.0" encoding="utf-8"?><rss version="2.0" xmlns:vol="http://example.org/vol"><channel><title>t</title><link>http://example.org/</link>` +
		strings.Join(items, "") + `</channel></rss>`
}

func (s *stateFeeds) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.hits == nil {
		s.hits = map[string][]time.Time{}
	}
	s.hits[r.URL.Path] = append(s.hits[r.URL.Path], time.Now())
	n := len(s.hits[r.URL.Path])
	news := s.news
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/rss+xml")
	switch r.URL.Path {
	case "/limited":
		if n == 1 {
			w.Header().Set("Retry-After", fmt.Sprint(stateRetryAfter))
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, rss(`<item><title>l</title><link>http://example.org/l</link><guid>l</guid></item>`))
	case "/failing":
		http.Error(w, "broken", http.StatusInternalServerError)
	case "/gone":
		http.Error(w, "gone", http.StatusGone)
	case "/old":
		http.Redirect(w, r, "/new", http.StatusMovedPermanently)
	case "/new":
		fmt.Fprint(w, rss(`<item><title>m</title><link>http://example.org/m</link><guid>m</guid></item>`))
	case "/guid":
		// Two items with one GUID: a feed-level warning at every poll.
		fmt.Fprint(w, rss(
			`<item><title>a</title><link>http://example.org/a</link><guid isPermaLink="false">same</guid></item>`,
			`<item><title>b</title><link>http://example.org/b</link><guid isPermaLink="false">same</guid></item>`))
	case "/need":
		fmt.Fprint(w, rss(`<item><title>Volunteers wanted</title><link>http://example.org/need1</link><guid>need1</guid><vol:quantity>3</vol:quantity></item>`))
	case "/news":
		var items []string
		for i := range news {
			items = append(items, fmt.Sprintf(`<item><title>news %d</title><link>http://example.org/news/%d</link><guid>news-%d</guid></item>`, i, i, i))
		}
		fmt.Fprint(w, rss(items...))
	default:
		http.NotFound(w, r)
	}
}

// stateStatus is the part of /status.json the test reads.
type stateStatus struct {
	Feeds []struct {
		ID       string     `json:"id"`
		MovedTo  string     `json:"moved_to"`
		Gone     bool       `json:"gone"`
		Failures int        `json:"failures"`
		NextPoll *time.Time `json:"next_poll"`
		LastPoll *time.Time `json:"last_poll"`
		Warnings []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"warnings"`
	} `json:"feeds"`
}

func getStatus(admin string) (*stateStatus, error) {
	resp, err := http.Get("http://" + admin + "/status.json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status.json: %s", resp.Status)
	}
	var st stateStatus
	return &st, json.NewDecoder(resp.Body).Decode(&st)
}

func getReadyz(admin string) (int, string) {
	resp, err := http.Get("http://" + admin + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPollStateAcrossRestarts runs a worker over feeds that answer 503 with
// Retry-After, fail, are gone, moved permanently, reuse a GUID, and hold a
// Need without a by-date; it kills the worker (SIGKILL), starts another,
// stops that one (SIGTERM) and starts a third. Each honours what the
// previous promised: no poll before the Retry-After or the backoff's end,
// no poll of the gone feed, the moved feed fetched once per poll at its new
// URL, the GUID warning logged once in all. Then writes to the API start
// failing: /readyz turns 503 within a send timeout, and 200 again once
// writes succeed.
func TestPollStateAcrossRestarts(t *testing.T) {
	t.Run("redis", func(t *testing.T) { testPollStateAcrossRestarts(t, false) })
	t.Run("embedded", func(t *testing.T) { testPollStateAcrossRestarts(t, true) })
}

func testPollStateAcrossRestarts(t *testing.T, embedded bool) {
	e := newE2E(t, feedfarm.Options{Feeds: 1, Items: 1, Seed: 1}, sandbox.Faults{})
	store := "redis:\n" + e.redisSection() + fmt.Sprintf("  prefix: %q\n", e.prefix)
	if embedded {
		store = fmt.Sprintf("store:\n  path: %q\n", filepath.Join(e.dir, "store.db"))
	}
	feedsSrv := &stateFeeds{news: 1}
	fs := httptest.NewServer(feedsSrv)
	t.Cleanup(fs.Close)
	admin := freeAddr(t)
	cfgPath := filepath.Join(e.dir, "state.yaml")
	cfg := fmt.Sprintf(`api:
  base_url: %s
  token_url: %s/oauth/token
  client_id: sandbox
  client_secret: sandbox-secret
%shttp:
  min_interval: 200ms
  max_backoff: 10s
publish:
  workers: 2
  claim_ttl: 2s
  lease_ttl: 1s
  shutdown_grace: 2s
  max_backoff: 1s
admin:
  listen: %q
log:
  level: debug
defaults:
  interval: 300ms
  initial_items: 1000
feeds:
  - {id: limited, url: %[5]s/limited}
  - {id: failing, url: %[5]s/failing}
  - {id: gone, url: %[5]s/gone}
  - {id: moved, url: %[5]s/old}
  - {id: guid, url: %[5]s/guid}
  - {id: news, url: %[5]s/news}
  - id: need
    url: %[5]s/need
    type: need
    need:
      quantity: vol:quantity
      by_date: vol:needed_by
`, e.sbURL, e.sbURL, store, admin, fs.URL)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The send timeout is publish's default bounded by half the lease ttl.
	const sendTimeout = 500 * time.Millisecond

	status := func() *stateStatus {
		t.Helper()
		var st *stateStatus
		waitFor(t, 30*time.Second, "status.json", func() bool {
			var err error
			st, err = getStatus(admin)
			return err == nil
		})
		return st
	}
	feed := func(st *stateStatus, id string) (f struct {
		moved    string
		gone     bool
		failures int
		next     time.Time
		warnings []string
	}) {
		for _, x := range st.Feeds {
			if x.ID == id {
				f.moved, f.gone, f.failures = x.MovedTo, x.Gone, x.Failures
				if x.NextPoll != nil {
					f.next = *x.NextPoll
				}
				for _, w := range x.Warnings {
					f.warnings = append(f.warnings, w.Code)
				}
			}
		}
		return f
	}

	// The first worker meets every condition.
	w1 := e.start("w1", "run", "--config", cfgPath)
	waitFor(t, 60*time.Second, "the first worker to poll every feed", func() bool {
		return feedsSrv.count("/limited") >= 1 && feedsSrv.count("/gone") >= 1 && feedsSrv.count("/new") >= 3 &&
			feedsSrv.count("/guid") >= 3 && feedsSrv.count("/need") >= 1
	})
	waitFor(t, 60*time.Second, "the failing feed to back off 5 times, and the items to be published", func() bool {
		st, err := getStatus(admin)
		return err == nil && feed(st, "failing").failures >= 5 && len(e.sb.AllContent()) >= 5
	})
	st := status()
	limited503 := feedsSrv.times("/limited")[0]
	if f := feed(st, "limited"); f.failures != 1 || f.next.Before(limited503.Add(stateRetryAfter*time.Second)) {
		t.Errorf("first worker: limited = %+v, want 1 failure and the next poll after the Retry-After (%s)", f, limited503.Add(stateRetryAfter*time.Second))
	}
	if f := feed(st, "moved"); !strings.HasSuffix(f.moved, "/new") || !slices.Contains(f.warnings, "moved") {
		t.Errorf("first worker: moved = %+v, want moved to /new with a warning", f)
	}
	if f := feed(st, "guid"); !slices.Contains(f.warnings, "mapping") {
		t.Errorf("first worker: guid = %+v, want its mapping warning", f)
	}

	// A Need without a by-date is published, without need_by_date_utc.
	var needs int
	for _, it := range e.sb.AllContent() {
		if it.Type != "need" {
			continue
		}
		needs++
		var obj map[string]any
		if err := json.Unmarshal(it.JSON, &obj); err != nil {
			t.Fatal(err)
		}
		if v, ok := obj["need_by_date_utc"]; ok && v != nil {
			t.Errorf("need published with need_by_date_utc %v; the feed gave none", v)
		}
	}
	if needs != 1 {
		t.Errorf("needs on the API = %d, want 1 (a Need without a by-date is published)", needs)
	}

	restarts := []struct {
		name string
		sig  syscall.Signal
	}{{"w2", syscall.SIGKILL}, {"w3", syscall.SIGTERM}}
	prev := w1
	for _, r := range restarts {
		// What the previous worker promised, just before it stops.
		st := status()
		failingNext := feed(st, "failing").next
		failuresBefore := feed(st, "failing").failures
		if err := prev.Process.Signal(r.sig); err != nil {
			t.Fatal(err)
		}
		_ = prev.Wait()
		stopped := time.Now()
		oldHits, goneHits, limitedHits := feedsSrv.count("/old"), feedsSrv.count("/gone"), feedsSrv.count("/limited")
		newHits, guidHits := feedsSrv.count("/new"), feedsSrv.count("/guid")
		failingHits := len(feedsSrv.times("/failing"))

		prev = e.start(r.name, "run", "--config", cfgPath)
		waitFor(t, 90*time.Second, r.name+" to poll the moved and guid feeds 3 times each", func() bool {
			return feedsSrv.count("/new") >= newHits+3 && feedsSrv.count("/guid") >= guidHits+3
		})
		waitFor(t, 90*time.Second, r.name+" to poll the failing feed again", func() bool {
			return feedsSrv.count("/failing") > failingHits
		})
		if n := feedsSrv.count("/old"); n != oldHits {
			t.Errorf("after %s: the moved feed's old URL was fetched %d more times, want none", r.sig, n-oldHits)
		}
		if n := feedsSrv.count("/gone"); n != goneHits {
			t.Errorf("after %s: the gone feed was fetched %d more times, want none", r.sig, n-goneHits)
		}
		if time.Since(limited503) < stateRetryAfter*time.Second {
			if n := feedsSrv.count("/limited"); n != limitedHits {
				t.Errorf("after %s: the feed that asked to wait %ds was fetched %d more times within it", r.sig, stateRetryAfter, n-limitedHits)
			}
		}
		first := feedsSrv.times("/failing")[failingHits]
		if first.Before(failingNext) {
			t.Errorf("after %s: the failing feed was fetched at %s, before its backoff ended at %s (stopped at %s)",
				r.sig, first.Format(time.StampMilli), failingNext.Format(time.StampMilli), stopped.Format(time.StampMilli))
		}
		waitFor(t, 30*time.Second, r.name+"'s status to show the failing feed's count going on", func() bool {
			st, err := getStatus(admin)
			return err == nil && feed(st, "failing").failures > failuresBefore
		})
		st = status()
		if f := feed(st, "gone"); !f.gone {
			t.Errorf("after %s: gone = %+v, want gone", r.sig, f)
		}
		if f := feed(st, "moved"); !strings.HasSuffix(f.moved, "/new") || !slices.Contains(f.warnings, "moved") {
			t.Errorf("after %s: moved = %+v, want still moved to /new with a warning", r.sig, f)
		}
		if f := feed(st, "limited"); f.next.Before(limited503.Add(stateRetryAfter * time.Second)) {
			t.Errorf("after %s: limited's next poll %s is before the Retry-After", r.sig, f.next)
		}
		if f := feed(st, "guid"); !slices.Contains(f.warnings, "mapping") {
			t.Errorf("after %s: guid = %+v, want its mapping warning", r.sig, f)
		}
	}

	// The GUID warning was logged once over the three processes.
	var logged int
	for _, name := range []string{"w1", "w2", "w3"} {
		b, err := os.ReadFile(filepath.Join(e.dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `msg="feed warning"`) && strings.Contains(line, " feed=guid ") {
				logged++
			}
		}
	}
	if logged != 1 {
		t.Errorf("the guid feed's warning was logged %d times over three processes, want once", logged)
	}

	// Readiness follows the writes.
	waitFor(t, 60*time.Second, "/readyz 200", func() bool { code, _ := getReadyz(admin); return code == http.StatusOK })
	if err := e.sb.SetFaults(sandbox.Faults{CommitThenFail: 1}); err != nil {
		t.Fatal(err)
	}
	feedsSrv.addNews(3)
	var failedAt time.Time
	waitFor(t, 60*time.Second, "a write to fail", func() bool {
		for _, rq := range e.sb.Requests() {
			if rq.Fault == "commit_then_fail" {
				failedAt = time.Now()
				return true
			}
		}
		return false
	})
	var body string
	waitFor(t, sendTimeout+15*time.Second, "/readyz 503 after writes fail", func() bool {
		var code int
		code, body = getReadyz(admin)
		return code == http.StatusServiceUnavailable
	})
	t.Logf("/readyz turned 503 %s after a failed write was seen (send timeout %s)", time.Since(failedAt).Round(time.Millisecond), sendTimeout)
	if !strings.Contains(body, "api writes") || !strings.Contains(body, "writes to the API failed") {
		t.Errorf("/readyz does not name the failing writes:\n%s", body)
	}
	if err := e.sb.SetFaults(sandbox.Faults{}); err != nil {
		t.Fatal(err)
	}
	feedsSrv.addNews(1)
	waitFor(t, 60*time.Second, "/readyz 200 once writes succeed", func() bool { code, _ := getReadyz(admin); return code == http.StatusOK })

	_ = prev.Process.Signal(syscall.SIGTERM)
	if err := prev.Wait(); err != nil {
		t.Errorf("last worker after SIGTERM: %v", err)
	}
}
