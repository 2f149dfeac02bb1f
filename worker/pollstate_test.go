package worker

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/feedworker/feedworker/internal/syncbuf"
)

// TestFeedWarningLoggedOnceAndShown: a feed that gives one GUID to two
// items raises a warning that is logged once over several polls and a
// restart of the worker on the same store, and is listed for the feed on
// the console and in /status.json.
func TestFeedWarningLoggedOnceAndShown(t *testing.T) {
	e := newEnv(t, 1, 1)
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprint(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><link>http://example.org/</link>`+
			`<item><title>a</title><link>http://example.org/a</link><guid isPermaLink="false">same</guid></item>`+
			`<item><title>b</title><link>http://example.org/b</link><guid isPermaLink="false">same</guid></item>`+
			`</channel></rss>`)
	}))
	t.Cleanup(feed.Close)
	cfg := e.config(t, testSecret, "")
	cfg.Feeds[0].URL = feed.URL + "/guid"

	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	w := newWorker(t, cfg, Options{Logger: log})
	for range 3 {
		if _, err := w.Once(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(w.admin().Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/status.json")
	if err != nil {
		t.Fatal(err)
	}
	var st Status
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Feeds) != 1 || len(st.Feeds[0].Warnings) != 1 || st.Feeds[0].Warnings[0].Code != "mapping" ||
		!strings.Contains(st.Feeds[0].Warnings[0].Message, `GUID "same"`) {
		t.Errorf("status.json feeds = %+v, want the GUID warning", st.Feeds)
	}
	resp, err = http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `data-warning="mapping"`) || !strings.Contains(string(page), "same") {
		t.Errorf("the console does not show the feed's warning:\n%s", page)
	}
	srv.Close()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// A restart on the same store remembers the warning is known.
	w2 := newWorker(t, cfg, Options{Logger: log})
	if _, err := w2.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), `msg="feed warning"`); n != 1 {
		t.Errorf("the warning was logged %d times over 4 polls and a restart, want once:\n%s", n, logs.String())
	}
}
