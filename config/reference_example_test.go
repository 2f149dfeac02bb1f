package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReferenceNeedsEveryExample checks that the reference cannot drift
// from examples/full.yaml: a key the file does not set, at the top level,
// inside a list or as a feed setting, is reported as lacking an example,
// and so is a key whose only value is null.
func TestReferenceNeedsEveryExample(t *testing.T) {
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	drop := map[string]string{
		"api.rate_burst":        "  rate_burst: 20\n",
		"type_rules[].type":     "        type: link\n", // the second rule's; the first still has one
		"event.time_zone_name":  "      time_zone_name: Europe/Berlin\n",
		"need.default_quantity": "      default_quantity: 1\n",
	}
	src := string(data)
	for key, line := range drop {
		if strings.Count(src, line) != 1 {
			t.Fatalf("%s: the line %q is not once in %s", key, line, exampleFile)
		}
		src = strings.Replace(src, line, "", 1)
	}
	src = strings.Replace(src, "  pprof: false\n", "  pprof:\n", 1)

	path := filepath.Join(t.TempDir(), "full.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := generateReferenceWith(t, path)
	want := []string{"admin.pprof", "api.rate_burst", "event.time_zone_name", "need.default_quantity"}
	got := slices.Sorted(slices.Values(ref.unexampled))
	if !slices.Equal(got, want) {
		t.Errorf("keys without an example = %q, want %q", got, want)
	}

	complete := generateReference(t)
	if len(complete.unexampled) > 0 {
		t.Errorf("%s lacks examples of %q", exampleFile, complete.unexampled)
	}
}

// TestExampleText checks how values are written in the example column:
// as the file wrote them, on one line, lists and mappings cut short.
func TestExampleText(t *testing.T) {
	src := `
x-common: &common
  interval: 1h
plain: https://example.com/a b
single: 'it''s (?i)\bx\b'
double: "tab\there \"quoted\" \\ end"   # a comment
double_tricky: "a # b, c: d"
folded: >
  one
  two
literal: |
  line one
  line two
tagged: !!str 0123
pipes: a || b | c
backtick: run ` + "`x`" + `
empty_string: ""
env: ${TOKEN:-}
null_value:
tilde: ~
short_list: [a, b]
block_list:
  - one
  - two
long_list: [aaaaaaaaaa, bbbbbbbbbb, cccccccccc, dddddddddd, eeeeeeeeee]
long_first: ["` + strings.Repeat("x", 60) + `", b]
map: {k: v, n: 1}
long_map:
  first_key: first value
  second_key: second value
  third_key: third value
rules:
  - when: has_category("Events") || link contains "/events/"
    type: event
  - when: other
    type: link
alias: *common
merged:
  <<: *common
  type: link
`
	path := filepath.Join(t.TempDir(), "ex.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ex := loadExamples(t, path)
	for key, want := range map[string]string{
		"plain":             "https://example.com/a b",
		"single":            `'it''s (?i)\bx\b'`,
		"double":            `"tab\there \"quoted\" \\ end"`,
		"double_tricky":     `"a # b, c: d"`,
		"folded":            `"one two\n"`,
		"literal":           `"line one\nline two\n"`,
		"tagged":            "!!str 0123",
		"pipes":             "a || b | c",
		"backtick":          "run `x`",
		"empty_string":      `""`,
		"env":               "${TOKEN:-}",
		"short_list":        "[a, b]",
		"block_list":        "[one, two]",
		"long_list":         "[aaaaaaaaaa, bbbbbbbbbb, cccccccccc, …]",
		"long_first":        "[…, b]",
		"map":               "{k: v, n: 1}",
		"long_map":          "{first_key: first value, …}",
		"rules":             "[{when: …, type: event}, …]",
		"rules[].when":      `has_category("Events") || link contains "/events/"`,
		"rules[].type":      "event",
		"alias":             "*common",
		"alias.interval":    "1h",
		"merged.interval":   "1h",
		"merged.type":       "link",
		"x-common.interval": "1h",
	} {
		got, ok := ex.of(key, false)
		if !ok || got != want {
			t.Errorf("%s: example %q (found %v), want %q", key, got, ok, want)
		}
	}
	for _, key := range []string{"null_value", "tilde", "missing"} {
		if got, ok := ex.of(key, false); ok {
			t.Errorf("%s: example %q, want none", key, got)
		}
	}
	for s, want := range map[string]string{
		"a || b":  "`a \\|\\| b`",
		"run `x`": "`` run `x` ``",
		"plain":   "`plain`",
	} {
		if got := codeSpan(s); got != want {
			t.Errorf("codeSpan(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestExampleOfFeedSetting checks that a feed setting's example is its
// first value in the file, under defaults or in a feed.
func TestExampleOfFeedSetting(t *testing.T) {
	const src = `
defaults:
  interval: 30m
feeds:
  - id: a
    interval: 1h
    type: link
  - id: b
    type: event
defaults_again_not_a_key: 1
`
	path := filepath.Join(t.TempDir(), "ex.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ex := loadExamples(t, path)
	for key, want := range map[string]string{"interval": "30m", "type": "link"} {
		if got, ok := ex.of(key, true); !ok || got != want {
			t.Errorf("%s: example %q (found %v), want %q", key, got, ok, want)
		}
	}
	if got, ok := ex.of("feeds[].id", false); !ok || got != "a" {
		t.Errorf("feeds[].id: example %q (found %v), want a", got, ok)
	}
	if got, ok := ex.of("enabled", true); ok {
		t.Errorf("enabled: example %q, want none", got)
	}
}
