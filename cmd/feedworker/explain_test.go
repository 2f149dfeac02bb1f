package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/worker"
)

// TestExplain: after a pass, explain tells for an item what happened to it
// (filtered by which rule; published as which content; dead-lettered with
// the API's answer), from the embedded store of the stopped worker, in
// words and as JSON; and lists a feed's polls and items.
func TestExplain(t *testing.T) {
	t.Parallel()
	_, cfg := cliEnv(t, 3, `  - id: kept
    url: FEED
    exclude:
      keywords: ["Item 1 of feed 0"]
  - id: refused
    url: FEED
    category_ids: [999]
`)
	if code, _, errOut := runCLI(t, "once", "--config", cfg, "--log-level", "error"); code != 0 {
		t.Fatalf("once: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLI(t, "explain", "--config", cfg, "--item", "item 1 of feed 0")
	if code != 0 {
		t.Fatalf("explain --item: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"feed kept", `filtered: excluded: keyword "item 1 of feed 0" in title`, "feed refused",
		"dead letter after 1 attempts, HTTP 400", "does not exist", "first seen"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain --item lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "explain", "--config", cfg, "--item", "item 2 of feed 0", "--json")
	var found []struct {
		Feed string `json:"feed"`
		Item struct {
			ID     string `json:"id"`
			Events []struct {
				Kind      string `json:"k"`
				ContentID int64  `json:"id"`
			} `json:"ev"`
		} `json:"item"`
	}
	if err := json.Unmarshal([]byte(out), &found); code != 0 || err != nil {
		t.Fatalf("explain --json: exit %d, %v:\n%s", code, err, out)
	}
	published := false
	for _, f := range found {
		for _, e := range f.Item.Events {
			if f.Feed == "kept" && e.Kind == "published" && e.ContentID > 0 {
				published = true
			}
		}
	}
	if !published {
		t.Errorf("explain --json shows no publish of item 2 in feed kept: %s", out)
	}
	code, out, _ = runCLI(t, "explain", "--config", cfg, "--feed", "kept")
	if code != 0 || !strings.Contains(out, "recent polls") || !strings.Contains(out, "filtered") || !strings.Contains(out, "published") {
		t.Errorf("explain --feed: exit %d:\n%s", code, out)
	}
	if code, _, errOut := runCLI(t, "explain", "--config", cfg, "--feed", "nope"); code != 1 || !strings.Contains(errOut, `no feed "nope"`) {
		t.Errorf("explain of an unknown feed: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "explain", "--config", cfg); code != 1 || !strings.Contains(errOut, "--feed ID or --item TEXT") {
		t.Errorf("explain without a target: exit %d, %q", code, errOut)
	}
}

// TestExplainWhileTheWorkerHoldsTheStore: the embedded store of a running
// worker is locked; explain says so instead of hanging or crashing.
func TestExplainWhileTheWorkerHoldsTheStore(t *testing.T) {
	t.Parallel()
	_, cfg := cliEnv(t, 1, `  - id: f
    url: FEED
`)
	c, err := worker.LoadConfig(cfg, "test")
	if err != nil {
		t.Fatal(err)
	}
	st, err := worker.OpenStore(t.Context(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	code, _, errOut := runCLI(t, "explain", "--config", cfg, "--item", "x")
	if code != 1 || !strings.Contains(errOut, "locked") {
		t.Errorf("explain on a locked store: exit %d, %q", code, errOut)
	}
}

// TestExplainWithRedis: with Redis, explain reads the history a worker
// wrote there (it works beside a running worker: nothing is locked).
func TestExplainWithRedis(t *testing.T) {
	t.Parallel()
	_, prefix := dedupetest.Redis(t)
	url := cmp.Or(os.Getenv("REDIS_URL"), dedupetest.DefaultURL)
	_, cfg := cliEnv(t, 2, fmt.Sprintf(`  - id: r
    url: FEED
redis:
  url: %s
  prefix: %q
`, url, prefix))
	if code, _, errOut := runCLI(t, "once", "--config", cfg, "--log-level", "error"); code != 0 {
		t.Fatalf("once: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLI(t, "explain", "--config", cfg, "--item", "item 0 of feed 0")
	if code != 0 || !strings.Contains(out, "feed r") || !strings.Contains(out, "published as content") {
		t.Errorf("explain with Redis: exit %d\n%s%s", code, out, errOut)
	}
}

// TestReadCommandsCreateNoStore: explain and deadletters run before any
// worker (or with a mistyped store.path) say that nothing was recorded
// and leave no store file behind, so the first run still finds none and
// says at INFO that it created one, rather than warning that a store has
// lost its marker.
func TestReadCommandsCreateNoStore(t *testing.T) {
	t.Parallel()
	_, cfg := cliEnv(t, 2, "  - id: news\n    url: FEED\n")
	store := filepath.Join(filepath.Dir(cfg), "s.db")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"explain", "--feed", "news"}, 0, "nothing recorded yet: embedded store " + store + ": the store does not exist yet"},
		{[]string{"explain", "--feed", "news", "--json"}, 0, `"polls": []`},
		{[]string{"explain", "--item", "anything", "--json"}, 0, "[]"},
		{[]string{"deadletters", "list"}, 0, "0 dead letters (embedded store " + store + ": the store does not exist yet"},
		{[]string{"deadletters", "retry", "--all"}, 1, "the store does not exist yet"},
	} {
		code, out, errOut := runCLI(t, append(c.args, "--config", cfg)...)
		if code != c.code || !strings.Contains(out+errOut, c.want) {
			t.Errorf("%v: exit %d (want %d), want %q in:\n%s%s", c.args, code, c.code, c.want, out, errOut)
		}
		if _, err := os.Stat(store); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("after %v the store file is there (%v)", c.args, err)
		}
	}
	code, _, errOut := runCLI(t, "once", "--config", cfg, "--log-level", "info")
	if code != 0 {
		t.Fatalf("once: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "the store's file was created by this start") || strings.Contains(errOut, "no epoch marker") {
		t.Errorf("the first run after them does not say it created the store:\n%s", errOut)
	}
	if code, out, errOut := runCLI(t, "explain", "--feed", "news", "--config", cfg); code != 0 || strings.Contains(out, "nothing recorded") {
		t.Errorf("explain after a run: exit %d:\n%s%s", code, out, errOut)
	}
}
