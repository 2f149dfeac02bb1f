package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/internal/syncbuf"
	"github.com/feedworker/feedworker/sandbox"
)

// runCLI runs the command line in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// cliEnv is a sandbox and a farm of one feed of items, with a config for
// them that adds feedYAML (the feeds: list) under a store in a temp folder.
func cliEnv(t *testing.T, items int, feedYAML string) (sb *sandbox.Server, cfg string) {
	t.Helper()
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ss := httptest.NewServer(sb)
	t.Cleanup(ss.Close)
	farm := httptest.NewServer(feedfarm.New(feedfarm.Options{Feeds: 1, Items: items, Seed: 1}))
	t.Cleanup(farm.Close)
	dir := t.TempDir()
	cfg = writeFile(t, dir, "c.yaml", fmt.Sprintf(`api:
  base_url: %s
  token_url: %s/oauth/token
  client_id: sandbox
  client_secret: sandbox-secret
store:
  path: %s
admin:
  listen: ""
feeds:
%s`, ss.URL, ss.URL, filepath.Join(dir, "s.db"), strings.ReplaceAll(feedYAML, "FEED", feedfarm.URL(farm.URL, 0))))
	return sb, cfg
}

func TestValidate(t *testing.T) {
	t.Parallel()
	code, out, _ := runCLI(t, "validate", "--config", "../../examples/quickstart.yaml")
	if code != 0 || !strings.Contains(out, "4 feeds") {
		t.Errorf("validate quickstart: exit %d, output %q; want 0 and a summary", code, out)
	}

	bad := writeFile(t, t.TempDir(), "bad.yaml", `api:
  base_url: embedded
feeds:
  - id: a
    url: ftp://example.org/feed
  - id: a
    url: https://example.org/feed
    interval: soon
    type_rules:
      - when: titel contains "x"
        type: event
`)
	code, out, _ = runCLI(t, "validate", "--config", bad)
	if code != 1 {
		t.Errorf("validate of a bad file: exit %d, want 1", code)
	}
	for _, want := range []string{
		"bad.yaml:5: feeds[0].url:",
		"bad.yaml:6: feeds[1].id:",
		"bad.yaml:8: feeds[1].interval:",
		"bad.yaml:10: feeds[1].type_rules[0].when:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
}

func TestPreviewURL(t *testing.T) {
	t.Parallel()
	abs, err := filepath.Abs("../../examples/feeds/rome__slashdot.xml")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "preview", "--url", "file://"+abs, "--type", "link")
	if code != 0 {
		t.Fatalf("preview: exit %d: %s", code, errOut)
	}
	var got []struct {
		Feed  string
		Items []struct {
			Skip       string `json:"skip"`
			ExternalID string `json:"external_id"`
			Path       string `json:"path"`
			Request    map[string]any
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("preview output is not JSON: %v\n%s", err, out)
	}
	if len(got) != 1 || len(got[0].Items) != 10 {
		t.Fatalf("preview: %d feeds, want 1 with 10 items:\n%.500s", len(got), out)
	}
	for _, it := range got[0].Items {
		r := it.Request
		url, _ := r["external_url"].(string)
		if it.Path != "/v3/link" || r["title"] == "" || !strings.HasPrefix(url, "http") || it.ExternalID == "" || r["external_id"] != it.ExternalID {
			t.Errorf("preview item %+v (skip %q) is not a complete link request", it, it.Skip)
		}
		if _, ok := r["publish_date_utc"].(string); !ok {
			t.Errorf("a link request without publish_date_utc: %v", r)
		}
	}

	// An event request never carries the fields an Event lacks.
	code, out, errOut = runCLI(t, "preview", "--config", "../../examples/quickstart.yaml", "--feed", "tour-dates")
	if code != 0 {
		t.Fatalf("preview of the events feed: exit %d: %s", code, errOut)
	}
	for _, absent := range []string{"publish_date_utc", "expiration_date_utc", "evergreen"} {
		if strings.Contains(out, absent) {
			t.Errorf("an event request carries %s:\n%.800s", absent, out)
		}
	}
	if !strings.Contains(out, `"event_start_date_time_utc": "2006-04-03 00:00:00"`) {
		t.Errorf("the event request lacks its start:\n%.800s", out)
	}
}

func TestOnceExitsNonZeroWhenAFeedFails(t *testing.T) {
	t.Parallel()
	sb, cfg := cliEnv(t, 3, `  - id: good
    url: FEED
  - id: missing
    url: FEED.missing
`)
	code, out, errOut := runCLI(t, "once", "--config", cfg, "--log-level", "error")
	if code != 1 {
		t.Errorf("once with a failing feed: exit %d, want 1", code)
	}
	if !strings.Contains(errOut, "missing:") || strings.Contains(errOut, "good:") {
		t.Errorf("once should name the failing feed only; stderr:\n%s", errOut)
	}
	if !strings.Contains(out, "published: 3 stories") || !strings.Contains(out, "1 failed") {
		t.Errorf("once summary:\n%s", out)
	}
	if n := len(sb.AllContent()); n != 3 {
		t.Errorf("the good feed's items on the API: %d, want 3", n)
	}

	code, out, errOut = runCLI(t, "content", "list", "--config", cfg, "--log-level", "error")
	if code != 0 || !strings.Contains(out, "3 items") || strings.Count(out, "story") != 3 {
		t.Errorf("content list: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "deadletters", "list", "--config", cfg, "--log-level", "error")
	if code != 0 || !strings.Contains(out, "0 dead letters") {
		t.Errorf("deadletters list: exit %d\n%s", code, out)
	}
}

func TestHealthcheck(t *testing.T) {
	t.Parallel()
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		fmt.Fprintln(w, "not ready\nstore: redis down")
	}))
	defer srv.Close()
	if code, _, _ := runCLI(t, "healthcheck", "--url", srv.URL); code != 0 {
		t.Errorf("healthcheck of a ready worker: exit %d, want 0", code)
	}
	status = http.StatusServiceUnavailable
	code, _, errOut := runCLI(t, "healthcheck", "--url", srv.URL)
	if code != 1 || !strings.Contains(errOut, "store: redis down") {
		t.Errorf("healthcheck of an unready worker: exit %d, stderr %q; want 1 naming the failing check", code, errOut)
	}
}

// TestSandboxCommandKeepsDataAcrossRestarts starts `feedworker sandbox
// --data FILE`, creates a story, restarts it and reads the story back.
func TestSandboxCommandKeepsDataAcrossRestarts(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "sandbox.json")
	addr := freeAddr(t)
	base := "http://" + addr
	start := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			var out syncbuf.Buffer
			done <- cmdSandbox(ctx, []string{"--addr", addr, "--data", data, "--log-level", "error"}, &out, &out)
		}()
		deadline := time.Now().Add(5 * time.Second)
		for {
			resp, err := http.Post(base+"/oauth/token", "application/x-www-form-urlencoded", nil)
			if err == nil {
				resp.Body.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sandbox did not start: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("sandbox command: %v", err)
			}
		}
	}
	client := func() *acs.Client {
		c, err := acs.NewClient(base, acs.ClientCredentials{TokenURL: acs.TokenURL(base), ClientID: "sandbox", ClientSecret: "sandbox-secret"}.HTTPClient(nil))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	stop := start()
	created, _, err := client().Stories.Create(t.Context(), &acs.StoryCreate{Title: acs.Ptr("Kept"), ExternalID: acs.Ptr("keep-1")})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	stop()

	stop = start()
	defer stop()
	got, _, err := client().Content.Get(t.Context(), created.ID)
	if err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	if got.Title == nil || *got.Title != "Kept" || got.Type != "story" {
		t.Errorf("after a restart the story reads %+v", got)
	}
}

// TestDeadLettersListAndRetry makes the API refuse every item (a category
// id it does not have), then lists the dead letters with the API's reason
// and queues them again.
func TestDeadLettersListAndRetry(t *testing.T) {
	t.Parallel()
	sb, cfg := cliEnv(t, 2, `  - id: refused
    url: FEED
    category_ids: [999]
`)
	if code, _, errOut := runCLI(t, "once", "--config", cfg, "--log-level", "error"); code != 0 {
		t.Fatalf("once: exit %d: %s", code, errOut)
	}
	if n := len(sb.AllContent()); n != 0 {
		t.Errorf("the API holds %d items it should have refused", n)
	}
	code, out, errOut := runCLI(t, "deadletters", "list", "--config", cfg)
	if code != 0 || !strings.Contains(out, "2 dead letters") || !strings.Contains(out, "refused/") ||
		!strings.Contains(out, "400") || !strings.Contains(out, "categor") {
		t.Fatalf("deadletters list: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "deadletters", "retry", "--config", cfg, "--all")
	if code != 0 || !strings.Contains(out, "2 dead letters queued again") {
		t.Errorf("deadletters retry --all: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "deadletters", "list", "--config", cfg)
	if code != 0 || !strings.Contains(out, "0 dead letters") {
		t.Errorf("after retry, deadletters list: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCLI(t, "deadletters", "retry", "--config", cfg, "refused/nope"); code != 1 || !strings.Contains(errOut, "no such dead letter") {
		t.Errorf("retry of an unknown id: exit %d, %q", code, errOut)
	}
}

// TestBackfill: first sight publishes the newest initial_items only; a
// backfill since a date publishes the rest, once.
func TestBackfill(t *testing.T) {
	t.Parallel()
	sb, cfg := cliEnv(t, 5, `  - id: news
    url: FEED
    initial_items: 2
`)
	if code, _, errOut := runCLI(t, "once", "--config", cfg, "--log-level", "error"); code != 0 {
		t.Fatalf("once: exit %d: %s", code, errOut)
	}
	if n := len(sb.AllContent()); n != 2 {
		t.Fatalf("first sight published %d items, want initial_items = 2", n)
	}
	code, out, errOut := runCLI(t, "backfill", "--config", cfg, "--feed", "news", "--since", "2000-01-01", "--log-level", "error")
	if code != 0 || !strings.Contains(out, "3 items queued for backfill") {
		t.Fatalf("backfill: exit %d\n%s%s", code, out, errOut)
	}
	if n := len(sb.AllContent()); n != 5 {
		t.Errorf("after the backfill the API holds %d items, want 5", n)
	}
	// A second backfill finds nothing left to publish.
	if code, out, _ := runCLI(t, "backfill", "--config", cfg, "--feed", "news", "--since", "2000-01-01", "--log-level", "error"); code != 0 || !strings.Contains(out, "0 items queued") {
		t.Errorf("second backfill: exit %d\n%s", code, out)
	}
	if n := len(sb.AllContent()); n != 5 {
		t.Errorf("after a second backfill the API holds %d items, want still 5", n)
	}
}
