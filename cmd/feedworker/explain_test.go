package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
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
