package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testEnv is the environment the testdata files are loaded with.
var testEnv = map[string]string{
	"FW_CLIENT_SECRET": "s3cret-from-env",
	"FW_TOKEN":         "t0ken-from-env",
}

// loadTestdata loads testdata/valid/name with testEnv.
func loadTestdata(t *testing.T, name string) *Config {
	t.Helper()
	cfg, err := testLoader(testEnv).Load(filepath.Join("testdata", "valid", name))
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return cfg
}

// testLoader reads env instead of the process environment, so tests can
// run in parallel, and pins the version in the user agent.
func testLoader(env map[string]string) Loader {
	return Loader{
		LookupEnv: func(name string) (string, bool) { v, ok := env[name]; return v, ok },
		Version:   "test",
	}
}

// parse parses src as "feeds.yaml" with env.
func parse(t *testing.T, src string, env map[string]string) (*Config, *Problems) {
	t.Helper()
	cfg, err := testLoader(env).Parse("feeds.yaml", []byte(src))
	if err == nil {
		return cfg, nil
	}
	var probs *Problems
	if !errors.As(err, &probs) {
		t.Fatalf("Parse: got %T %v, want *Problems", err, err)
	}
	return nil, probs
}

// mustParse parses src and fails the test on any problem.
func mustParse(t *testing.T, src string, env map[string]string) *Config {
	t.Helper()
	cfg, probs := parse(t, src, env)
	if probs != nil {
		t.Fatalf("Parse: unexpected problems:\n%v", probs)
	}
	return cfg
}

// head is a valid api section: lines 1 to 3 of every snippet built on it.
const head = "api:\n  base_url: https://api.example.com\n  token: t\n"

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got); review and run with -update if right:\n%s", path, diff)
	}
}

// TestValidExamples loads every file of testdata/valid and compares the
// resolved, redacted result with its golden file, which shows the effect
// of defaults and inheritance in review.
func TestValidExamples(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/valid/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("testdata/valid: got %d files, err %v", len(files), err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			cfg := loadTestdata(t, filepath.Base(file))
			out, err := json.MarshalIndent(struct {
				Summary string
				Config  *Config
			}{cfg.Summary(), cfg.Redacted()}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, strings.TrimSuffix(file, ".yaml")+".golden.json", append(out, '\n'))
		})
	}
}

// TestInvalidExamples checks the whole report of each file of
// testdata/invalid against its golden file.
func TestInvalidExamples(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("testdata/invalid: got %d files, err %v", len(files), err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			cfg, err := testLoader(nil).Load(file)
			var probs *Problems
			if !errors.As(err, &probs) {
				t.Fatalf("Load: got %v, %v; want a *Problems", cfg, err)
			}
			if cfg != nil {
				t.Errorf("Load returned a config along with problems")
			}
			golden(t, strings.TrimSuffix(file, ".yaml")+".golden", []byte(err.Error()+"\n"))
		})
	}
}

func TestEverythingReportedAtOnce(t *testing.T) {
	t.Parallel()
	_, err := testLoader(nil).Load("testdata/invalid/everything.yaml")
	wrapped := fmt.Errorf("load config: %w", err)
	var probs *Problems
	if !errors.As(wrapped, &probs) {
		t.Fatalf("errors.As through a wrap: got %T", err)
	}
	// One problem per line of the file that has one (the golden file
	// holds the messages); a few lines have two.
	lines := map[int]bool{}
	for _, p := range probs.List {
		if p.File != "testdata/invalid/everything.yaml" || p.Line == 0 {
			t.Errorf("problem without file or line: %+v", p)
		}
		lines[p.Line] = true
	}
	if len(probs.List) < 25 || len(lines) < 25 {
		t.Errorf("got %d problems on %d lines, want at least 25 each:\n%v", len(probs.List), len(lines), err)
	}
	for i := 1; i < len(probs.List); i++ {
		if probs.List[i].Line < probs.List[i-1].Line {
			t.Errorf("problems not sorted by line: %d after %d", probs.List[i].Line, probs.List[i-1].Line)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want an error matching os.ErrNotExist", err)
	}
	var probs *Problems
	if errors.As(err, &probs) {
		t.Errorf("a missing file is not a *Problems: %v", err)
	}
}

func TestLoadUsesProcessEnvironment(t *testing.T) {
	// Not parallel: t.Setenv.
	t.Setenv("FEEDWORKER_CONFIG_TEST_URL", "https://from-env.example.com")
	cfg, err := Parse("feeds.yaml", []byte("api:\n  base_url: ${FEEDWORKER_CONFIG_TEST_URL}\n  token: t\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.API.BaseURL, "https://from-env.example.com"; got != want {
		t.Errorf("base_url: got %q, want %q", got, want)
	}
	if !strings.HasPrefix(cfg.HTTP.UserAgent, "feedworker/") {
		t.Errorf("user agent: got %q", cfg.HTTP.UserAgent)
	}
}

func TestExpand(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOST": "example.com", "EMPTY": "", "PORT": "8080"}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	tests := []struct {
		name, in, want string
		referenced     bool
		err            string
	}{
		{name: "no reference", in: "plain text", want: "plain text"},
		{name: "set", in: "https://${HOST}:${PORT}/x", want: "https://example.com:8080/x", referenced: true},
		{name: "set empty", in: "a${EMPTY}b", want: "ab", referenced: true},
		{name: "unset with default", in: "${NOPE:-15m}", want: "15m", referenced: true},
		{name: "empty with default", in: "${EMPTY:-fallback}", want: "fallback", referenced: true},
		{name: "set ignores default", in: "${HOST:-other}", want: "example.com", referenced: true},
		{name: "empty default", in: "${NOPE:-}", want: "", referenced: true},
		{name: "default with colon and spaces", in: "${NOPE:-a: b c}", want: "a: b c", referenced: true},
		{name: "dollar dollar", in: "price $$5 and $${HOST}", want: "price $5 and ${HOST}"},
		{name: "lone dollar kept", in: `^\$[0-9]+$`, want: `^\$[0-9]+$`},
		{name: "dollar before letter kept", in: "$HOST", want: "$HOST"},
		{name: "trailing dollar", in: "cost$", want: "cost$"},
		{name: "unset", in: "x${NOPE}y", err: "environment variable NOPE is not set"},
		{name: "unterminated", in: "${HOST", err: `unterminated "${HOST"`},
		{name: "empty name", in: "${}", err: "invalid variable name"},
		{name: "digit first", in: "${1A}", err: "invalid variable name"},
		{name: "other operator", in: "${HOST:?required}", err: "unsupported reference"},
		{name: "dash without colon", in: "${HOST-x}", err: "unsupported reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, referenced, errs := expand(tt.in, lookup)
			if tt.err != "" {
				if len(errs) != 1 || !strings.Contains(errs[0], tt.err) {
					t.Errorf("expand(%q) errors: got %q, want one containing %q", tt.in, errs, tt.err)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("expand(%q): unexpected errors %q", tt.in, errs)
			}
			if got != tt.want || referenced != tt.referenced {
				t.Errorf("expand(%q): got %q, %v; want %q, %v", tt.in, got, referenced, tt.want, tt.referenced)
			}
		})
	}
}

func TestExpansionInFile(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"INTERVAL": "20m",
		"ITEMS":    "3",
		"ENABLED":  "false",
		"TRICKY":   "x\nfeeds: [{id: injected, url: 'https://evil.example'}]",
		"EMPTY":    "",
	}
	src := head + `feeds:
  - id: a
    url: https://example.com/${EMPTY}feed.xml
    interval: ${INTERVAL}
    initial_items: "${ITEMS}"
    enabled: ${ENABLED}
    more_button_text: ${TRICKY}
    title_max: ${UNSET:-99}
    summary_max: ${EMPTY:-}
    categories: ["$${NOT_A_VAR}"]
    category_map:
      ${KEY}: value
`
	cfg := mustParse(t, src, env)
	if len(cfg.Feeds) != 1 {
		t.Fatalf("got %d feeds, want 1: a variable must not add YAML structure", len(cfg.Feeds))
	}
	f := cfg.Feeds[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"url", f.URL, "https://example.com/feed.xml"},
		{"interval", *f.Interval, Duration(20 * 60e9)},
		{"quoted number", *f.InitialItems, 3},
		{"boolean", *f.Enabled, false},
		{"YAML in a variable stays text", *f.MoreButtonText, env["TRICKY"]},
		{"default", *f.TitleMax, 99},
		{"empty expansion means not set", *f.SummaryMax, 500},
		{"escaped", f.Categories, []string{"${NOT_A_VAR}"}},
		{"keys not expanded", f.CategoryMap, map[string]string{"${KEY}": "value"}},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// wantProblems checks that src has exactly the problems want, each written
// as "line: field: message" (message may be a prefix).
func wantProblems(t *testing.T, src string, env map[string]string, want ...string) {
	t.Helper()
	_, probs := parse(t, src, env)
	if probs == nil {
		t.Fatalf("Parse: no problems, want %q", want)
	}
	var got []string
	for _, p := range probs.List {
		got = append(got, fmt.Sprintf("%d: %s: %s", p.Line, p.Field, p.Msg))
	}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = strings.HasPrefix(got[i], want[i])
	}
	if !ok {
		t.Errorf("problems:\ngot  %q\nwant %q", got, want)
	}
}

func TestExpansionProblems(t *testing.T) {
	t.Parallel()
	src := head + `feeds:
  - id: a
    url: ${FEED_URL}
    interval: ${POLL:-}
  - id: b
    url: https://example.com/${PATH
`
	wantProblems(t, src, nil,
		"6: feeds[0].url: environment variable FEED_URL is not set",
		`9: feeds[1].url: unterminated "${PATH"`,
	)
}

func TestDecodeProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      []string
	}{
		{"unknown key with suggestion", head + "http:\n  timout: 5s\n",
			[]string{`5: http.timout: unknown key (did you mean "timeout"?)`}},
		{"unknown key far from any", head + "http:\n  colour: blue\n",
			[]string{"5: http.colour: unknown key"}},
		{"unknown top-level key", head + "feed:\n  - id: a\n", []string{`4: feed: unknown key (did you mean "feeds"?)`}},
		{"x- keys are for anchors", head + "x-base: &b {interval: 5m}\nfeeds: []\n", nil},
		{"x- keys only at the top", head + "http:\n  x-note: hi\n", []string{"5: http.x-note: unknown key"}},
		{"unknown key in a feed", head + "feeds:\n  - id: a\n    url: https://e.com/f\n    intervall: 5m\n",
			[]string{`7: feeds[0].intervall: unknown key (did you mean "interval"?)`}},
		{"duplicate key", head + "log:\n  level: info\n  level: debug\n",
			[]string{"6: log.level: duplicate key (first at line 5)"}},
		{"bad duration", head + "http:\n  timeout: soon\n", []string{`5: http.timeout: invalid duration "soon"`}},
		{"negative duration", head + "http:\n  timeout: -5s\n", []string{`5: http.timeout: invalid duration "-5s"`}},
		{"NaN days", head + "http:\n  timeout: NaNd\n", []string{`5: http.timeout: invalid duration "NaNd"`}},
		{"bad size", head + "http:\n  max_body_size: 10 parsecs\n", []string{`5: http.max_body_size: invalid size`}},
		{"bad integer", head + "http:\n  max_redirects: ten\n", []string{`5: http.max_redirects: want a whole number, got "ten"`}},
		{"float for integer", head + "http:\n  max_redirects: 2.5\n", []string{`5: http.max_redirects: want a whole number`}},
		{"yes is not a boolean", head + "admin:\n  pprof: yes\n", []string{`5: admin.pprof: want true or false, got "yes"`}},
		{"infinite number", "api:\n  base_url: embedded\n  rate_limit: .inf\n", []string{`3: api.rate_limit: want a number, got ".inf"`}},
		{"list for a value", head + "log:\n  level: [info]\n", []string{"5: log.level: want a single value, got a list"}},
		{"value for a list", head + "feeds:\n  - id: a\n    url: https://e.com/f\n    categories: News\n",
			[]string{`7: feeds[0].categories: want a list, got "News"`}},
		{"value for a section", head + "http: fast\n", []string{`4: http: want a mapping of keys, got "fast"`}},
		{"list for a feed", head + "feeds:\n  - [a, b]\n", []string{"5: feeds[0]: want a mapping of keys, got a list"}},
		{"self-referencing alias", head + "x-a: &a [*a]\nfeeds: []\n", nil},
		{"alias loop used", head + "x-a: &a [*a]\nfeeds:\n  - id: a\n    url: https://e.com/f\n    categories: *a\n",
			[]string{"4: feeds[0].categories[0]: alias *a refers to a value that contains it"}},
		{"alias to the wrong shape", head + "feeds: &f\n  - id: a\n    url: https://e.com/f\n    categories: *f\n",
			[]string{"5: feeds[0].categories[0]: want a single value, got a mapping"}},
		{"merge key", head + "x-c: &c {interval: 5m, title_max: 9}\nfeeds:\n  - id: a\n    url: https://e.com/f\n    <<: *c\n    title_max: 10\n", nil},
		{"merge of a value", head + "feeds:\n  - id: a\n    url: https://e.com/f\n    <<: 5\n",
			[]string{`7: feeds[0]: << must merge a mapping or a list of mappings, got "5"`}},
		{"second document", head + "---\nfeeds: []\n", []string{"4: : a second YAML document"}},
		{"syntax error", head + "feeds:\n  - id: [a\n", []string{"5: : invalid YAML: did not find expected ',' or ']'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.want == nil {
				mustParse(t, tt.src, nil)
				return
			}
			wantProblems(t, tt.src, nil, tt.want...)
		})
	}
}

func TestAliasBomb(t *testing.T) {
	t.Parallel()
	// 120 feeds of 120 rules of 120 categories, through aliases: a file of
	// a few kilobytes that would decode to 1.7 million values.
	many := func(s string) string { return strings.TrimSuffix(strings.Repeat(s+", ", 120), ", ") }
	src := head +
		"x-c: &c [" + many("c") + "]\n" +
		"x-r: &r {when: 'true', categories: *c}\n" +
		"x-f: &f {url: 'https://e.com/f', category_rules: [" + many("*r") + "]}\n" +
		"feeds: [" + many("*f") + "]\n"
	_, probs := parse(t, src, nil)
	if probs == nil || !strings.Contains(probs.Error(), "values through aliases") {
		t.Errorf("got %v, want the alias expansion refused", probs)
	}
}

func TestSyntaxErrorLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want string
	}{
		{"a: 1\nb:\n  - id: [a\n", `3: invalid YAML: did not find expected ',' or ']'`},
		{"a: 1\nb: {c: 1\n", `2: invalid YAML: did not find expected ',' or '}'`},
		{"a: 1\nb:\n  c: 1\n d: 2\n", `4: invalid YAML: did not find expected key`},
		{"a: 1\nb: 2\nc 2\nd: 3\n", `3: invalid YAML: could not find expected ':'`},
		{"a: 1\n\tb: 2\n", `2: invalid YAML: found a tab character`},
		{"a: 1\nb: @x\n", `2: invalid YAML: found character that cannot start any token`},
		{"a: 1\nb: *nope\n", `2: invalid YAML: unknown anchor *nope`},
	}
	for _, tt := range tests {
		_, probs := parse(t, tt.src, nil)
		if probs == nil || len(probs.List) != 1 {
			t.Errorf("%q: got %v, want one problem", tt.src, probs)
			continue
		}
		p := probs.List[0]
		if got := fmt.Sprintf("%d: %s", p.Line, p.Msg); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%q: got %q, want %q", tt.src, got, tt.want)
		}
	}
}

func TestRootNotAMapping(t *testing.T) {
	t.Parallel()
	wantProblems(t, "- a\n- b\n", nil, "1: : want a mapping of keys, got a list")
	cfg, probs := parse(t, "", nil)
	if cfg != nil || probs == nil || !strings.Contains(probs.Error(), "api.base_url: missing") {
		t.Errorf("empty file: got %v, %v; want base_url missing", cfg, probs)
	}
}

func TestRelativeFileURLsFollowTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	doc := "api: {base_url: embedded}\nfeeds:\n  - id: local\n    url: file:feeds/a.xml\n  - id: absolute\n    url: file:///srv/b.xml\n"
	path := filepath.Join(dir, "conf", "feeds.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Feeds[0].URL, "file://"+filepath.ToSlash(filepath.Join(dir, "conf", "feeds", "a.xml")); got != want {
		t.Errorf("relative file URL = %q, want %q", got, want)
	}
	if got := cfg.Feeds[1].URL; got != "file:///srv/b.xml" {
		t.Errorf("absolute file URL = %q, want it unchanged", got)
	}
}

func TestDurationAndSizeRefuseOverflow(t *testing.T) {
	for _, s := range []string{"NaNd", "1e300d", "-1d", "Infw"} {
		if d, err := ParseDuration(s); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", s, d)
		}
	}
	var b ByteSize
	if err := b.UnmarshalText([]byte("9000000000GiB")); err == nil {
		t.Errorf("ByteSize 9000000000GiB = %d, want an overflow error", b)
	}
	if d, err := ParseDuration("90d"); err != nil || d != 90*24*time.Hour {
		t.Errorf("ParseDuration(90d) = %v, %v", d, err)
	}
}
