package config

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLinesAfterLoad checks that a loaded config, which keeps its text
// instead of the map of lines, answers Line as the checks during the load
// saw it: with ${VAR} references (expanded, empty and unset), anchors,
// merge keys, lists and maps in the file, for Parse and Load alike.
func TestLinesAfterLoad(t *testing.T) {
	t.Parallel()
	src := head + `x-base: &base
  interval: 30m
  categories: [A, B]
defaults:
  <<: *base
  category_map:
    news: News
    ${UNSET:-sport}: Sport
http:
  user_agent: ${AGENT}
  proxy: ${EMPTY:-}
feeds:
  - id: a
    url: https://e.example/a
    <<: *base
  - id: b
    url: ${FEED_URL}
    include:
      keywords: [x, y]
    type_rules:
      - when: has_category("E")
        type: event
`
	env := map[string]string{"AGENT": "agent/1", "FEED_URL": "https://e.example/b", "EMPTY": ""}
	var during map[string]int
	l := testLoader(env)
	l.Check = func(cfg *Config, _ *Problems) { during = maps.Clone(cfg.lines.get()) }

	path := filepath.Join(t.TempDir(), "feeds.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, load := range map[string]func() (*Config, error){
		"Parse": func() (*Config, error) { return l.Parse(path, []byte(src)) },
		"Load":  func() (*Config, error) { return l.Load(path) },
	} {
		during = nil
		cfg, err := load()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(during) < 20 {
			t.Fatalf("%s: the check saw %d lines, want the file's", name, len(during))
		}
		if cfg.lines.m != nil || cfg.lines.src == nil {
			t.Errorf("%s: a loaded config holds its map of lines, not its text", name)
		}
		if diff := cmp.Diff(during, cfg.lines.get()); diff != "" {
			t.Errorf("%s: lines after the load differ from the check's (-during +after):\n%s", name, diff)
		}
		for field, want := range map[string]int{"feeds[1].url": 20, "feeds[1].type_rules[0].when": 24, "defaults.category_map.news": 10} {
			if got := cfg.Line(field); got != want {
				t.Errorf("%s: Line(%q): got %d, want %d", name, field, got, want)
			}
		}
	}
}

// TestParseKeepsItsOwnText changes the caller's slice after Parse: the
// config's lines must not move.
func TestParseKeepsItsOwnText(t *testing.T) {
	t.Parallel()
	src := []byte(head + "feeds:\n  - id: a\n    url: https://e.example/a\n")
	cfg, err := testLoader(nil).Parse("feeds.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	for i := range src {
		src[i] = '#'
	}
	if got := cfg.Line("feeds[0].url"); got != 6 {
		t.Errorf("Line(feeds[0].url) after the caller's slice changed: got %d, want 6", got)
	}
}
