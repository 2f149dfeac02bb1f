package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/sandbox"
)

// TestOnceOverLooseSandbox runs `once` over a farm of feeds against the
// embedded sandbox in its strict and its loose style (api.sandbox_style):
// both publish every item once and finish. The times are logged for
// comparison, never asserted (CI shares its cores).
func TestOnceOverLooseSandbox(t *testing.T) {
	t.Parallel()
	const feeds, items = 4, 30
	farm := httptest.NewServer(feedfarm.New(feedfarm.Options{Feeds: feeds, Items: items, Seed: 7}))
	t.Cleanup(farm.Close)
	for _, style := range []string{"strict", "loose"} {
		t.Run(style, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			data := filepath.Join(dir, "sandbox.json")
			var b strings.Builder
			fmt.Fprintf(&b, "api:\n  base_url: embedded\n  sandbox_data: %s\n  sandbox_style: %s\nstore:\n  path: %s\nadmin:\n  listen: \"\"\ndefaults:\n  initial_items: 1000\nfeeds:\n",
				data, style, filepath.Join(dir, "s.db"))
			for i := range feeds {
				fmt.Fprintf(&b, "  - id: f%d\n    url: %s\n", i, feedfarm.URL(farm.URL, i))
			}
			cfg := writeFile(t, dir, "c.yaml", b.String())

			start := time.Now()
			code, _, errOut := runCLI(t, "once", "--config", cfg, "--log-level", "warn")
			took := time.Since(start)
			t.Logf("style %s: once published %d items in %v", style, feeds*items, took.Round(time.Millisecond))
			if code != 0 {
				t.Fatalf("once: exit %d\n%s", code, errOut)
			}
			if strings.Contains(errOut, "level=ERROR") || strings.Contains(errOut, "will retry") {
				t.Errorf("once logged errors or retries:\n%s", errOut)
			}
			if code, out, _ := runCLI(t, "deadletters", "list", "--config", cfg); code != 0 || !strings.Contains(out, "0 dead letters") {
				t.Errorf("deadletters list: exit %d\n%s", code, out)
			}
			// The embedded sandbox kept its state in the data file.
			sb, err := sandbox.New(sandbox.Options{DataFile: data})
			if err != nil {
				t.Fatal(err)
			}
			byExt := map[string]int{}
			for _, it := range sb.AllContent() {
				byExt[it.ExternalID]++
			}
			if len(byExt) != feeds*items {
				t.Errorf("%d distinct items on the API, want %d", len(byExt), feeds*items)
			}
			for ext, n := range byExt {
				if n != 1 {
					t.Errorf("%s: %d copies on the API, want 1", ext, n)
				}
			}
		})
	}
}

// garbleIDs plays a service whose 2xx /v3 answers carry ids nobody can
// read ("id":"17x"), while on.
func garbleIDs(on *atomic.Bool, next http.Handler) http.Handler {
	id := regexp.MustCompile(`"id":(\d+)`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !on.Load() || !strings.HasPrefix(r.URL.Path, "/v3/") {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Code >= 200 && rec.Code < 300 {
			body = id.ReplaceAll(body, []byte(`"id":"${1}x"`))
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// TestOnceWithUnreadableAnswers: the service carries out every POST (201)
// but no answer of it can be read. `once` finishes; each item is one dead
// letter whose reason names the field, after one POST and one look-up;
// one ERROR line stands for the feed and cause. Once the answers can be
// read, `deadletters retry --all` and another pass record every item,
// posting none twice.
func TestOnceWithUnreadableAnswers(t *testing.T) {
	t.Parallel()
	const items = 5
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var garble atomic.Bool
	garble.Store(true)
	ss := httptest.NewServer(garbleIDs(&garble, sb))
	t.Cleanup(ss.Close)
	farm := httptest.NewServer(feedfarm.New(feedfarm.Options{Feeds: 1, Items: items, Seed: 3}))
	t.Cleanup(farm.Close)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", fmt.Sprintf(`api:
  base_url: %s
  token_url: %s/oauth/token
  client_id: sandbox
  client_secret: sandbox-secret
store:
  path: %s
admin:
  listen: ""
feeds:
  - id: odd
    url: %s
`, ss.URL, ss.URL, filepath.Join(dir, "s.db"), feedfarm.URL(farm.URL, 0)))

	start := time.Now()
	code, _, errOut := runCLI(t, "once", "--config", cfg, "--log-level", "debug", "--log-format", "json")
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("once: exit %d\n%s", code, errOut)
	}
	count := func(method, path string) int {
		n := 0
		for _, r := range sb.Requests() {
			if r.Method == method && r.Path == path {
				n++
			}
		}
		return n
	}
	// One look-up is the feed's first sight (reconcile mode), which an
	// unreadable answer leaves as first sight always was.
	posts, lookups := count(http.MethodPost, "/v3/story"), count(http.MethodGet, "/v3/content")-1
	levels := map[string]int{}
	attempts, reasons := 0, 0
	sc := bufio.NewScanner(strings.NewReader(errOut))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
			Cause string `json:"cause"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		levels[rec.Level]++
		if strings.HasPrefix(rec.Msg, "delivery failed") || rec.Msg == "published" {
			attempts++
		}
		if rec.Msg == "delivery failed permanently; dead-lettered" &&
			strings.HasPrefix(rec.Cause, `acs: POST /v3/story: the service answered 201 but its body could not be read: field id: "`) &&
			strings.Contains(rec.Cause, "looking it up by external_id: acs: GET /v3/content: the service answered 200") {
			reasons++
		}
	}
	t.Logf("%d items in %v: %d POSTs, %d look-ups, %d delivery attempts, log lines by level %v", items, took.Round(time.Millisecond), posts, lookups, attempts, levels)
	if posts != items || lookups != items || attempts != items {
		t.Errorf("%d POSTs, %d look-ups, %d attempts; want %d of each (one per item, no retries)", posts, lookups, attempts, items)
	}
	if reasons != items {
		t.Errorf("%d dead-letter lines give the reason (the 201, the field, the look-up); want %d:\n%s", reasons, items, errOut)
	}
	if levels["ERROR"] != 1 {
		t.Errorf("%d ERROR lines; want 1 for the feed and cause:\n%s", levels["ERROR"], errOut)
	}
	if got := len(sb.AllContent()); got != items {
		t.Errorf("%d items on the API, want %d (every POST was carried out)", got, items)
	}
	code, out, _ := runCLI(t, "deadletters", "list", "--config", cfg)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d dead letters", items)) ||
		!strings.Contains(out, "acs: POST /v3/story: the service answered 201 but its body could not be read") {
		t.Fatalf("deadletters list: exit %d\n%s", code, out)
	}

	garble.Store(false)
	if code, out, _ := runCLI(t, "deadletters", "retry", "--config", cfg, "--all"); code != 0 || !strings.Contains(out, fmt.Sprintf("%d dead letters queued again", items)) {
		t.Fatalf("deadletters retry --all: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCLI(t, "once", "--config", cfg, "--log-level", "warn"); code != 0 {
		t.Fatalf("once after the fix: exit %d\n%s", code, errOut)
	}
	if code, out, _ := runCLI(t, "deadletters", "list", "--config", cfg); code != 0 || !strings.Contains(out, "0 dead letters") {
		t.Errorf("after the retry, deadletters list: exit %d\n%s", code, out)
	}
	if got := count(http.MethodPost, "/v3/story"); got != items {
		t.Errorf("%d POSTs after the retry; want still %d", got, items)
	}
	byExt := map[string]int{}
	for _, it := range sb.AllContent() {
		byExt[it.ExternalID]++
	}
	for ext, n := range byExt {
		if n != 1 {
			t.Errorf("%s: %d copies on the API, want 1", ext, n)
		}
	}
}
