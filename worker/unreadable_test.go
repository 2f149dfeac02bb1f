package worker

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/sandbox"
)

// TestStatusShowsUnreadableAnswers: a service whose 2xx answers carry ids
// that cannot be read. The status page and status.json list the feed and
// the cause with the reason, next to the dead letters.
func TestStatusShowsUnreadableAnswers(t *testing.T) {
	sb, err := sandbox.New(sandbox.Options{ClientSecret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`"id":(\d+)`)
	ss := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		sb.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if strings.HasPrefix(r.URL.Path, "/v3/") && rec.Code/100 == 2 {
			body = id.ReplaceAll(body, []byte(`"id":"${1}x"`))
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	}))
	t.Cleanup(ss.Close)
	farm := httptest.NewServer(feedfarm.New(feedfarm.Options{Feeds: 1, Items: 2, Seed: 1}))
	t.Cleanup(farm.Close)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	yaml := fmt.Sprintf(`api:
  base_url: %s
  token_url: %s/oauth/token
  client_id: sandbox
  client_secret: %s
store:
  path: %s
admin:
  listen: ""
feeds:
  - id: odd
    url: %s
`, ss.URL, ss.URL, testSecret, filepath.Join(dir, "store.db"), feedfarm.URL(farm.URL, 0))
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path, "test")
	if err != nil {
		t.Fatal(err)
	}
	w := newWorker(t, cfg, Options{})
	if _, err := w.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w.admin().Handler())
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/status.json")
	if err != nil {
		t.Fatal(err)
	}
	var st Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(st.DeadLetters) != 2 {
		t.Errorf("status.json dead letters = %+v; want 2", st.DeadLetters)
	}
	if u := st.Unreadable; len(u) != 1 || u[0].FeedID != "odd" || u[0].Cause != "id" || u[0].Count != 2 ||
		!strings.Contains(u[0].Reason, "the service answered 201 but its body could not be read: field id") {
		t.Errorf("status.json unreadable answers = %+v; want feed odd, cause id, 2, with the reason", u)
	}

	resp, err = http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`<table id="unreadable">`, "<code>id</code>", "the service answered 201 but its body could not be read"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("status page lacks %q", want)
		}
	}
}
