package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
// and leave no store file (nor its directory) behind, so the first run
// still finds none and says at INFO that it created one, rather than
// warning that a store has lost its marker.
func TestReadCommandsCreateNoStore(t *testing.T) {
	t.Parallel()
	_, cfg := cliEnv(t, 2, "  - id: news\n    url: FEED\n")
	dir := filepath.Join(filepath.Dir(cfg), "state")
	store := filepath.Join(dir, "s.db")
	body, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg = writeFile(t, filepath.Dir(cfg), "state.yaml", strings.Replace(string(body), filepath.Join(filepath.Dir(cfg), "s.db"), store, 1))
	noStore := "embedded store " + store + ": the store does not exist yet"
	for _, c := range []struct {
		args []string
		code int
		out  string // in stdout; "" for none
		err  string // in stderr
		json string // stdout is this JSON
	}{
		{args: []string{"explain", "--feed", "news"}, out: "nothing recorded yet: " + noStore},
		{args: []string{"explain", "--feed", "news", "--json"}, json: `{"feed": "news", "polls": [], "items": []}`},
		{args: []string{"explain", "--item", "anything", "--json"}, json: `[]`},
		{args: []string{"deadletters", "list"}, out: "0 dead letters (" + noStore},
		{args: []string{"deadletters", "retry", "--all"}, code: 1, err: noStore},
		{args: []string{"deadletters", "retry", "--config", "CFG", "news/x"}, code: 1, err: noStore},
	} {
		args := append(slices.Clone(c.args), "--config", "CFG")
		if slices.Contains(c.args, "CFG") {
			args = slices.Clone(c.args)
		}
		args[slices.Index(args, "CFG")] = cfg
		code, out, errOut := runCLI(t, args...)
		if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errOut, c.err) {
			t.Errorf("%v: exit %d (want %d), want %q in stdout and %q in stderr:\n%s\n%s", c.args, code, c.code, c.out, c.err, out, errOut)
		}
		if c.json != "" {
			var got, want any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Errorf("%v: not JSON (%v): %s", c.args, err, out)
			} else if json.Unmarshal([]byte(c.json), &want) == nil && fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%v: %s, want %s", c.args, out, c.json)
			}
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("after %v the store's directory is there (%v)", c.args, err)
		}
	}
	code, _, errOut := runCLI(t, "once", "--config", cfg, "--log-level", "info")
	if code != 0 {
		t.Fatalf("once: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "the store's file was created by this start") || strings.Contains(errOut, "no epoch marker") {
		t.Errorf("the first run after them does not say it created the store:\n%s", errOut)
	}
	code, out, errOut := runCLI(t, "explain", "--feed", "news", "--config", cfg, "--json")
	var f struct {
		Polls []any `json:"polls"`
	}
	if err := json.Unmarshal([]byte(out), &f); code != 0 || err != nil || len(f.Polls) == 0 {
		t.Errorf("explain after a run: exit %d, %v, %d polls:\n%s%s", code, err, len(f.Polls), out, errOut)
	}
}
