package worker

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/history"
	"github.com/feedworker/feedworker/sandbox"
)

// fatesEnv is a pass over two farm feeds of three items: farm-0 filters
// its item 1 and publishes only its newest other item on first sight,
// farm-1 names a category the API does not have, so the API refuses its
// items for good.
func fatesEnv(t *testing.T, token string, withRedis bool) (*env, *Worker) {
	t.Helper()
	e := newEnv(t, 2, 3)
	redisURL, prefix := "", ""
	if withRedis {
		_, prefix = dedupetest.Redis(t)
		redisURL = cmp.Or(os.Getenv("REDIS_URL"), dedupetest.DefaultURL)
	}
	cfg := e.config(t, testSecret, redisURL)
	cfg.Redis.Prefix = prefix
	cfg.Admin.Token = token
	cfg.Feeds[0].Mapping.Exclude = &config.Filter{Keywords: []string{"Item 1 of feed 0"}}
	one := 1
	cfg.Feeds[0].InitialItems = &one
	cfg.Feeds[1].Mapping.CategoryIDs = []int64{999}
	w := newWorker(t, cfg, Options{})
	_, _ = w.Once(t.Context())
	return e, w
}

// TestHistoryRecordsFates: after a pass the history holds each item's
// fate (filtered naming the rule, published as its content id, seen only
// beyond initial_items, dead letter with the API's answer), each feed's
// poll and the hour's counts; after an edit at the source, the update
// names the field that changed. In the embedded store and in Redis.
func TestHistoryRecordsFates(t *testing.T) {
	for _, store := range []string{"embedded", "redis"} {
		t.Run(store, func(t *testing.T) {
			e, w := fatesEnv(t, "", store == "redis")
			ctx := t.Context()
			f0, err := w.hist.store.Feed(ctx, "farm-0")
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[history.Kind]int{}
			for _, it := range f0.Items {
				last := it.Last()
				kinds[last.Kind]++
				switch last.Kind {
				case history.Filtered:
					if !strings.Contains(last.Detail, `"item 1 of feed 0" in title`) || !strings.HasPrefix(it.Title, "Item 1 of feed 0") {
						t.Errorf("filtered item %+v does not name its rule", it)
					}
				case history.Published:
					if it.ContentID() == 0 || it.FirstSeen == 0 || it.Link == "" || it.Events[0].Kind != history.Queued {
						t.Errorf("published item %+v", it)
					}
				}
			}
			if kinds[history.Filtered] != 1 || kinds[history.Published] != 1 || kinds[history.SeenOnly] != 1 {
				t.Errorf("farm-0 fates = %v, want 1 filtered, 1 published and 1 seen only", kinds)
			}
			if len(f0.Polls) != 1 || f0.Polls[0].StatusCode != 200 || f0.Polls[0].New != 1 || f0.Polls[0].Filtered != 1 || f0.Polls[0].Unchanged != 1 {
				t.Errorf("farm-0 polls = %+v", f0.Polls)
			}
			f1, err := w.hist.store.Feed(ctx, "farm-1")
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range f1.Items {
				if last := it.Last(); last.Kind != history.DeadLetter || last.Status != 400 || !strings.Contains(last.Detail, "does not exist") {
					t.Errorf("farm-1 item fate = %+v, want a dead letter with the API's answer", last)
				}
			}
			if len(f1.Items) != 3 {
				t.Errorf("farm-1 has %d items remembered, want 3", len(f1.Items))
			}
			hours, err := w.hist.store.Hours(ctx, time.Now().Add(-time.Hour), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			var pub, failed int
			for _, h := range hours {
				pub += h.Published
				failed += h.Failed
			}
			if pub != 1 || failed != 3 {
				t.Errorf("hours count %d published and %d failed, want 1 and 3", pub, failed)
			}

			// Every title changes at the source: the published item is
			// updated, and its history says the title changed.
			e.farm.Edit(1)
			if _, err := w.Once(ctx); err != nil {
				t.Logf("second pass: %v", err)
			}
			f0, err = w.hist.store.Feed(ctx, "farm-0")
			if err != nil {
				t.Fatal(err)
			}
			var updated *history.Item
			for i, it := range f0.Items {
				if it.Last().Kind == history.Updated {
					updated = &f0.Items[i]
				}
			}
			if updated == nil {
				t.Fatalf("no item updated after the edit: %+v", f0.Items)
			}
			ev := updated.Events
			if n := len(ev); n < 4 || ev[n-2].Kind != history.Changed || !slices.Equal(ev[n-2].Fields, []string{"title"}) || !strings.Contains(updated.Title, "(edit 1)") {
				t.Errorf("updated item = %+v, want ... changed (title), updated, with the new title", updated)
			}
			if len(f0.Polls) != 2 || f0.Polls[0].Changed != 1 {
				t.Errorf("farm-0 polls after the edit = %+v", f0.Polls)
			}
		})
	}
}

func post(t *testing.T, c *http.Client, u string, form url.Values, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestConsolePages: the console shows the chart, the failing and healthy
// feeds, the dead letters with the API's answer, a feed's items with their
// fates, and finds an item by its title.
func TestConsolePages(t *testing.T) {
	_, w := fatesEnv(t, "", false)
	srv := httptest.NewServer(w.admin().Handler())
	defer srv.Close()
	c := srv.Client()
	checks := []struct {
		path string
		code int
		want []string
	}{
		{"/", 200, []string{`<svg id="sends"`, `class="pub"`, `<table id="feeds">`, `data-feed="farm-0"`, `id="deadletters"`,
			"does not exist", "read-only", `<time datetime=`}},
		{"/feeds/farm-0", 200, []string{"filtered: excluded: keyword", "published as content", `class="content" href="` + w.config().API.BaseURL + "/v3/content/",
			"Recent polls", "200 ok", "exclude:"}},
		{"/feeds/farm-1", 200, []string{"dead letter after 1 attempts, HTTP 400"}},
		{"/feeds/nope", 404, []string{"no such feed"}},
		{"/search?q=item+2+of+feed+1", 200, []string{"farm-1", "Item 2 of feed 1"}},
	}
	for _, ck := range checks {
		code, body := get(t, c, srv.URL+ck.path)
		if code != ck.code {
			t.Errorf("GET %s = %d, want %d", ck.path, code, ck.code)
		}
		for _, want := range ck.want {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s lacks %q", ck.path, want)
			}
		}
		if strings.Contains(body, "<script") || strings.Contains(body, testSecret) {
			t.Errorf("GET %s carries a script or the API secret", ck.path)
		}
	}
}

// TestConsoleActions: without admin.token the console is read-only; with
// it, poll now and retry need the token as a bearer or a signed-in form
// with its CSRF token from this origin; each try is counted.
func TestConsoleActions(t *testing.T) {
	t.Run("read-only", func(t *testing.T) {
		_, w := fatesEnv(t, "", false)
		srv := httptest.NewServer(w.admin().Handler())
		defer srv.Close()
		code, body := post(t, srv.Client(), srv.URL+"/feeds/farm-0/poll", nil, map[string]string{"Authorization": "Bearer x"})
		if code != http.StatusForbidden || !strings.Contains(body, "read-only") {
			t.Errorf("poll now on a read-only console = %d %q", code, body)
		}
	})

	const token = "console-test-token"
	_, w := fatesEnv(t, token, false)
	srv := httptest.NewServer(w.admin().Handler())
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, nil) }()
	defer func() { cancel(); <-done }()

	c := srv.Client()
	polls := func() int {
		f, err := w.hist.store.Feed(t.Context(), "farm-0")
		if err != nil {
			t.Fatal(err)
		}
		return len(f.Polls)
	}
	before := polls()
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic " + token}} {
		if code, _ := post(t, c, srv.URL+"/feeds/farm-0/poll", nil, h); code != http.StatusUnauthorized {
			t.Errorf("poll now with %v = %d, want 401", h, code)
		}
	}
	if code, body := post(t, c, srv.URL+"/feeds/farm-0/poll", nil, map[string]string{"Authorization": "Bearer " + token}); code != http.StatusAccepted {
		t.Fatalf("poll now with the token = %d %q", code, body)
	}
	waitUntil(t, "the poll asked for", func() bool { return polls() > before })
	if code, _ := post(t, c, srv.URL+"/feeds/nope/poll", nil, map[string]string{"Authorization": "Bearer " + token}); code != http.StatusNotFound {
		t.Errorf("poll now of an unknown feed = %d, want 404", code)
	}

	// The sign-in form, then a form with the session's CSRF token.
	jar, _ := cookiejar.New(nil)
	bc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	same := map[string]string{"Origin": srv.URL}
	if code, _ := post(t, bc, srv.URL+"/signin", url.Values{"token": {"wrong"}, "next": {"/"}}, same); code != http.StatusSeeOther || len(jar.Cookies(mustURL(srv.URL))) != 0 {
		t.Errorf("sign-in with a wrong token = %d, cookies %v", code, jar.Cookies(mustURL(srv.URL)))
	}
	if code, _ := post(t, bc, srv.URL+"/signin", url.Values{"token": {token}, "next": {"/"}}, same); code != http.StatusSeeOther {
		t.Fatalf("sign-in = %d", code)
	}
	_, page := get(t, bc, srv.URL+"/")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("signed in, the console has no action form:\n%.3000s", page)
	}
	dls, err := w.pub.DeadLetters(t.Context())
	if err != nil || len(dls) == 0 {
		t.Fatalf("dead letters: %v, %v", dls, err)
	}
	retry := url.Values{"id": {dls[0].ID}, "next": {"/"}}
	if code, _ := post(t, bc, srv.URL+"/console/retry", retry, same); code != http.StatusForbidden {
		t.Errorf("retry without the CSRF token = %d, want 403", code)
	}
	retry.Set("csrf", m[1])
	if code, _ := post(t, bc, srv.URL+"/console/retry", retry, map[string]string{"Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Errorf("cross-origin retry = %d, want 403", code)
	}
	code, _ := post(t, bc, srv.URL+"/console/retry", retry, same)
	if code != http.StatusSeeOther {
		t.Errorf("retry = %d, want 303", code)
	}
	if n := testutil.ToFloat64(w.console.actions.WithLabelValues("retry", "ok")); n != 1 {
		t.Errorf("retries counted ok: %v, want 1", n)
	}
	if n := testutil.ToFloat64(w.console.actions.WithLabelValues("retry", "refused")); n != 2 {
		t.Errorf("retries counted refused: %v, want 2", n)
	}
	if n := testutil.ToFloat64(w.console.actions.WithLabelValues("poll_now", "refused")); n != 3 {
		t.Errorf("polls now counted refused: %v, want 3", n)
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// TestHistoryRecordsRetries: an item whose sends fail waits in the outbox,
// and its history says so: the attempt, the API's status, the error and
// when the next try is due; the hour counts the failed sends.
func TestHistoryRecordsRetries(t *testing.T) {
	e := newEnv(t, 1, 1)
	w := newWorker(t, e.config(t, testSecret, ""), Options{})
	// A first pass while the API is healthy: a feed new to the store is
	// looked up on the API (reconcile mode) before anything of it is
	// queued, and that look-up must succeed before items can wait.
	if _, err := w.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.farm.Change(1, 1)
	if err := e.sb.SetFaults(sandbox.Faults{ErrorRate: 1, ErrorCodes: []int{503}}); err != nil {
		t.Fatal(err)
	}
	_, _ = w.Once(t.Context())
	f, err := w.hist.store.Feed(t.Context(), "farm-0")
	if err != nil {
		t.Fatal(err)
	}
	var waiting []history.Item
	for _, it := range f.Items {
		if it.Last().Kind == history.Retrying {
			waiting = append(waiting, it)
		}
	}
	if len(waiting) != 1 {
		t.Fatalf("%d of %d remembered items waiting after a failed send, want 1", len(waiting), len(f.Items))
	}
	last := waiting[0].Last()
	// once rides out a short outage, so the item may have been tried more
	// than once before the pass gave up.
	if last.Kind != history.Retrying || last.Attempt < 1 || last.Status != 503 || last.Detail == "" || last.Next <= last.At {
		t.Errorf("fate = %+v, want a retry with the 503, its error and the next try", last)
	}
	if d := history.Describe(last, time.UnixMilli(last.At)); !strings.Contains(d, "send failed (attempt ") || !strings.Contains(d, "HTTP 503)") || !strings.Contains(d, "next try in") {
		t.Errorf("described as %q", d)
	}
}
