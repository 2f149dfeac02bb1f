package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// feed is a valid feed entry at lines 5 and 6 under "feeds:" at line 4,
// right after head; snippets add its keys from line 7.
const feed = "feeds:\n  - id: a\n    url: https://example.com/feed.xml\n"

// TestValidationRules checks each rule alone, with its exact line and
// field: every case must produce exactly the problems listed.
func TestValidationRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      []string
	}{
		// api
		{"base_url missing", "api:\n  token: t\n", []string{"1: api.base_url: missing"}},
		{"no api section", "log:\n  level: info\n", []string{"0: api.base_url: missing", "0: api: no credentials"}},
		{"base_url relative", "api:\n  base_url: /v3\n  token: t\n", []string{`2: api.base_url: not an absolute http(s) URL (got "/v3")`}},
		{"base_url other scheme", "api:\n  base_url: ftp://x.example\n  token: t\n", []string{"2: api.base_url: not an absolute http(s) URL"}},
		{"token_url bad", "api:\n  base_url: embedded\n  token_url: auth\n", []string{"3: api.token_url: not an absolute http(s) URL"}},
		{"no credentials", "api:\n  base_url: https://a.example\n", []string{"1: api: no credentials"}},
		{"embedded needs none", "api:\n  base_url: embedded\n", nil},
		{"embedded takes partial credentials", "api:\n  base_url: embedded\n  client_id: x\n", nil},
		{"client credentials complete", "api:\n  base_url: https://a.example\n  token_url: https://a.example/oauth/token\n  client_id: id\n  client_secret: s\n", nil},
		{"client credentials partial", "api:\n  base_url: https://a.example\n  client_id: id\n",
			[]string{"1: api.token_url: missing", "1: api.client_secret: missing"}},
		{"client secret without id", "api:\n  base_url: https://a.example\n  token_url: https://a.example/t\n  client_secret: s\n",
			[]string{"1: api.client_id: missing"}},
		{"token and credentials", "api:\n  base_url: https://a.example\n  token: t\n  client_id: id\n",
			[]string{"3: api.token: set either a token or client credentials"}},
		{"token and credentials, embedded", "api:\n  base_url: embedded\n  token: t\n  client_secret: s\n",
			[]string{"3: api.token: set either a token or client credentials"}},
		{"empty scope", head + "  scopes: [a, '']\n", []string{"4: api.scopes[1]: must not be empty"}},
		{"negative rate", head + "  rate_limit: -0.5\n", []string{"4: api.rate_limit: must not be negative"}},
		{"zero burst", head + "  rate_burst: 0\n", []string{"4: api.rate_burst: must be at least 1"}},
		{"zero timeout", head + "  timeout: 0s\n", []string{"4: api.timeout: must be greater than zero"}},
		{"template path without type", head + "  template_path: /v3/template\n", []string{"4: api.template_path: want a path starting with / that contains {type}"}},
		{"sandbox style unknown", head + "  sandbox_style: tidy\n", []string{`4: api.sandbox_style: want strict or loose, got "tidy"`}},
		{"sandbox style loose", head + "  sandbox_style: loose\n", nil},
		// redis and store
		{"redis scheme", head + "redis:\n  url: tcp://r:6379\n", []string{`5: redis.url: want a redis://, rediss:// or unix:// URL, got "tcp://r:6379"`}},
		{"redis password hidden in problem", head + "redis:\n  url: 'http://:pw@r:6379'\n", []string{`5: redis.url: want a redis://, rediss:// or unix:// URL, got "http://xxxxx@r:6379"`}},
		{"redis ok", head + "redis:\n  url: rediss://u:pw@r:6380/1\n  prefix: ''\n", nil},
		// redis topologies
		{"cluster inferred", head + "redis:\n  addrs: [a:1, b:2, c:3]\n", nil},
		{"sentinel inferred", head + "redis:\n  addrs: [s:26379]\n  master_name: m\n  db: 2\n", nil},
		{"db with cluster", head + "redis:\n  mode: cluster\n  addrs: [a:1]\n  db: 3\n", []string{"7: redis.db: Redis Cluster has only database 0"}},
		{"db with inferred cluster", head + "redis:\n  addrs: [a:1, b:2]\n  db: 3\n", []string{"6: redis.db: Redis Cluster has only database 0"}},
		{"master_name without sentinel", head + "redis:\n  mode: cluster\n  addrs: [a:1]\n  master_name: m\n", []string{"7: redis.master_name: only used with mode: sentinel (mode is cluster)"}},
		{"master_name with standalone", head + "redis:\n  mode: standalone\n  addrs: [a:1]\n  master_name: m\n", []string{"7: redis.master_name: only used with mode: sentinel"}},
		{"sentinel without master", head + "redis:\n  mode: sentinel\n  addrs: [s:1]\n", []string{"4: redis.master_name: missing"}},
		{"sentinel with url", head + "redis:\n  url: redis://r\n  master_name: m\n", []string{"5: redis.url: mode sentinel takes the sentinels in addrs"}},
		{"cluster with url", head + "redis:\n  mode: cluster\n  url: redis://r\n", []string{"6: redis.url: mode cluster takes seed nodes in addrs"}},
		{"url and addrs", head + "redis:\n  url: redis://r\n  addrs: [a:1]\n", []string{"6: redis.addrs: set url (one server) or addrs, not both"}},
		{"unknown mode", head + "redis:\n  mode: ring\n  addrs: [a:1]\n", []string{`5: redis.mode: want standalone, sentinel or cluster, got "ring"`}},
		{"bad addr", head + "redis:\n  mode: cluster\n  addrs: [a:1, nohost]\n", []string{`6: redis.addrs[1]: want host:port, got "nohost"`}},
		{"standalone with two addrs", head + "redis:\n  mode: standalone\n  addrs: [a:1, b:2]\n", []string{"6: redis.addrs: standalone mode takes one address, got 2"}},
		{"tls files without enabled", head + "redis:\n  addrs: [a:1]\n  tls:\n    insecure_skip_verify: true\n", []string{"6: redis.tls: ca_file, cert_file, key_file and insecure_skip_verify need enabled: true"}},
		{"tls cert without key", head + "redis:\n  addrs: [a:1]\n  tls:\n    enabled: true\n    cert_file: /etc/hostname\n", []string{"6: redis.tls: set both cert_file and key_file"}},
		{"tls missing ca", head + "redis:\n  addrs: [a:1]\n  tls:\n    enabled: true\n    ca_file: /nonexistent/ca.pem\n", []string{"8: redis.tls.ca_file: stat /nonexistent/ca.pem: no such file or directory"}},
		{"prefix with braces", head + "redis:\n  url: redis://r\n  prefix: 'a{b}:'\n", []string{"6: redis.prefix: must not contain { or }"}},
		{"zero partitions", head + "redis:\n  url: redis://r\n  partitions: 0\n", []string{"6: redis.partitions: want 1 to 4096, got 0"}},
		{"password without redis", head + "redis:\n  password: pw\n", []string{"5: redis.password: has no effect without redis.url or redis.addrs"}},
		{"store path empty", head + "store:\n  path: ''\n", []string{"5: store.path: must not be empty when no Redis is configured"}},
		{"store path empty with redis", head + "redis:\n  url: redis://r\nstore:\n  path: ''\n", nil},
		{"zero retention", head + "store:\n  retention: 0d\n", []string{"5: store.retention: must be greater than zero"}},
		// http
		{"empty user agent", head + "http:\n  user_agent: ' '\n", []string{"5: http.user_agent: must not be empty"}},
		{"zero connect timeout", head + "http:\n  connect_timeout: 0s\n", []string{"5: http.connect_timeout: must be greater than zero"}},
		{"zero timeout http", head + "http:\n  timeout: 0s\n", []string{"5: http.timeout: must be greater than zero"}},
		{"zero body", head + "http:\n  max_body_size: 0\n", []string{"5: http.max_body_size: must be greater than zero"}},
		{"negative redirects", head + "http:\n  max_redirects: -1\n", []string{"5: http.max_redirects: must not be negative"}},
		{"zero redirects ok", head + "http:\n  max_redirects: 0\n", nil},
		{"zero concurrency", head + "http:\n  max_concurrency: 0\n  per_host_concurrency: 0\n",
			[]string{"5: http.max_concurrency: must be at least 1", "6: http.per_host_concurrency: must be at least 1"}},
		{"inverted interval bounds", head + "http:\n  min_interval: 2h\n  max_interval: 1h\n",
			[]string{"6: http.max_interval: 1h is below http.min_interval (2h)"}},
		{"zero backoff", head + "http:\n  max_backoff: 0s\n", []string{"5: http.max_backoff: must be greater than zero"}},
		{"proxy scheme", head + "http:\n  proxy: proxy:3128\n", []string{`5: http.proxy: want an absolute http://, https:// or socks5:// URL`}},
		{"proxy ok", head + "http:\n  proxy: socks5://p:1080\n", nil},
		{"allow networks", head + "http:\n  allow_networks: [10.0.0.0/8, 10.1.2.3, intranet, 10.0.0.0/40]\n",
			[]string{`5: http.allow_networks[2]: want a network such as 10.20.0.0/16 or an address, got "intranet"`, `5: http.allow_networks[3]: want a network`}},
		// publish, admin, log
		{"zero workers", head + "publish:\n  workers: 0\n", []string{"5: publish.workers: must be at least 1"}},
		{"zero publish durations", head + "publish:\n  max_backoff: 0s\n  claim_ttl: 0s\n  lease_ttl: 0s\n  shutdown_grace: 0s\n",
			[]string{"5: publish.max_backoff: must be greater than zero", "6: publish.claim_ttl: must be greater than zero", "7: publish.lease_ttl: must be greater than zero"}},
		{"listen without port", head + "admin:\n  listen: localhost\n", []string{`5: admin.listen: want host:port`}},
		{"listen bad port", head + "admin:\n  listen: ':99999'\n", []string{`5: admin.listen: want host:port`}},
		{"listen off", head + "admin:\n  listen: ''\n", nil},
		{"log level", head + "log:\n  level: trace\n", []string{`5: log.level: want debug, info, warn or error, got "trace"`}},
		{"log format", head + "log:\n  format: logfmt\n", []string{`5: log.format: want text or json, got "logfmt"`}},
		// feeds
		{"id missing", head + "feeds:\n  - url: https://e.example/f\n", []string{"5: feeds[0].id: missing"}},
		{"id unsafe", head + "feeds:\n  - id: a/b\n    url: https://e.example/f\n", []string{`5: feeds[0].id: "a/b": use letters, digits`}},
		{"id dot dot", head + "feeds:\n  - id: ..\n    url: https://e.example/f\n", []string{`5: feeds[0].id: "..": use letters`}},
		{"id too long", head + "feeds:\n  - id: " + strings.Repeat("x", 129) + "\n    url: https://e.example/f\n", []string{"5: feeds[0].id: longer than 128 characters"}},
		{"id duplicate", head + feed + "  - id: b\n    url: https://e.example/b\n  - id: a\n    url: https://e.example/a\n",
			[]string{`9: feeds[2].id: duplicate feed id "a", also feeds[0].id at line 5`}},
		{"url missing", head + "feeds:\n  - id: a\n", []string{"5: feeds[0].url: missing: every feed needs a url"}},
		{"url relative", head + "feeds:\n  - id: a\n    url: example.com/rss\n", []string{`6: feeds[0].url: not an absolute http(s) or file URL (got "example.com/rss")`}},
		{"url without host", head + "feeds:\n  - id: a\n    url: 'https:///rss'\n", []string{"6: feeds[0].url: not an absolute http(s) or file URL"}},
		{"url relative file (made absolute beside the config)", head + "feeds:\n  - id: a\n    url: file:feed.xml\n", nil},
		{"url file on another host", head + "feeds:\n  - id: a\n    url: file://fileserver/feed.xml\n", []string{"6: feeds[0].url: not an absolute http(s) or file URL"}},
		{"url file ok", head + "feeds:\n  - id: a\n    url: file:///srv/feed.xml\n", nil},
		// feed settings
		{"interval below floor", head + feed + "    interval: 30s\n", []string{"7: feeds[0].interval: 30s is below http.min_interval (1m)"}},
		{"interval above ceiling", head + feed + "    interval: 2d\n", []string{"7: feeds[0].interval: 2d is above http.max_interval (24h)"}},
		{"interval zero", head + feed + "    interval: 0s\n", []string{"7: feeds[0].interval: must be greater than zero"}},
		{"interval with raised floor", head + "http:\n  min_interval: 1h\n" + feed + "    interval: 30m\n", []string{"9: feeds[0].interval: 30m is below http.min_interval (1h)"}},
		{"defaults interval reported once", head + "defaults:\n  interval: 10s\n" + feed + "  - id: b\n    url: https://e.example/b\n",
			[]string{"5: defaults.interval: 10s is below http.min_interval (1m)"}},
		{"negative initial items", head + feed + "    initial_items: -1\n", []string{"7: feeds[0].initial_items: must not be negative"}},
		{"reposts", head + feed + "    reposts:\n      match: [url, title]\n      window: 0s\n      flood_max: -1\n",
			[]string{`8: feeds[0].reposts.match[1]: unknown matcher "title" (want url or text)`, "9: feeds[0].reposts.window: must be greater than zero",
				"10: feeds[0].reposts.flood_max: must not be negative"}},
		{"reposts off", head + feed + "    reposts:\n      match: []\n", nil},
		{"content type", head + feed + "    type: article\n", []string{`7: feeds[0].type: unknown content type "article"`}},
		{"type rule", head + feed + "    type_rules:\n      - when: ''\n        type: blog\n",
			[]string{"8: feeds[0].type_rules[0].when: missing", `9: feeds[0].type_rules[0].type: unknown content type "blog"`}},
		{"type rule without type", head + feed + "    type_rules:\n      - when: 'true'\n", []string{"8: feeds[0].type_rules[0].type: missing: a rule needs the type"}},
		{"ids positive", head + feed + "    author_id: 0\n    priority_id: -1\n    status_id: -2\n    segments: [1, 0]\n    category_ids: [-3]\n",
			[]string{"7: feeds[0].author_id: must be a positive id", "8: feeds[0].priority_id: must be a positive id", "9: feeds[0].status_id: must be a positive id",
				"10: feeds[0].segments[1]: must be a positive id", "11: feeds[0].category_ids[0]: must be a positive id"}},
		{"durations positive", head + feed + "    priority_for: 0s\n    expire_after: 0s\n    max_age: 0s\n",
			[]string{"7: feeds[0].priority_for: must be greater than zero", "8: feeds[0].expire_after: must be greater than zero", "9: feeds[0].max_age: must be greater than zero"}},
		{"empty category", head + feed + "    categories: [News, '']\n", []string{"7: feeds[0].categories[1]: must not be empty"}},
		{"category map empty source", head + feed + "    category_map:\n      '': News\n      Old: ''\n", []string{"8: feeds[0].category_map.: the source category name must not be empty"}},
		{"category rule", head + feed + "    category_rules:\n      - when: ' '\n        categories: []\n",
			[]string{"8: feeds[0].category_rules[0].when: missing", "9: feeds[0].category_rules[0].categories: missing"}},
		{"filter empty", head + feed + "    exclude:\n      fields: [title]\n", []string{"7: feeds[0].exclude: set keywords or patterns"}},
		{"filter pattern", head + feed + "    include:\n      patterns: ['ok', '[z-a]']\n", []string{"8: feeds[0].include.patterns[1]: error parsing regexp: invalid character class range"}},
		{"filter field", head + feed + "    include:\n      keywords: [x, '']\n      fields: [title, url]\n",
			[]string{"8: feeds[0].include.keywords[1]: must not be empty", `9: feeds[0].include.fields[1]: unknown field "url"`}},
		{"title max", head + feed + "    title_max: 0\n    summary_max: -1\n", []string{"7: feeds[0].title_max: must be at least 1", "8: feeds[0].summary_max: must not be negative"}},
		{"summary max zero ok", head + feed + "    summary_max: 0\n", nil},
		{"full text", head + feed + "    full_text: sometimes\n    full_text_min_chars: -1\n    full_text_selector: 'div[unclosed'\n",
			[]string{`7: feeds[0].full_text: want never, auto or always, got "sometimes"`, "8: feeds[0].full_text_min_chars: must not be negative", "9: feeds[0].full_text_selector: not a CSS selector"}},
		{"full text empty selector", head + feed + "    full_text: always\n    full_text_selector: ' '\n", []string{"8: feeds[0].full_text_selector: must not be empty"}},
		{"full text ok", head + feed + "    full_text: auto\n    full_text_min_chars: 0\n    full_text_selector: 'article p, .body'\n", nil},
		{"event", head + feed + "    event:\n      time_zone_id: 0\n      date_pattern: '(?P<date'\n",
			[]string{"8: feeds[0].event.time_zone_id: must be a positive id", "9: feeds[0].event.date_pattern: error parsing regexp"}},
		{"need", head + feed + "    need:\n      default_quantity: -1\n", []string{"8: feeds[0].need.default_quantity: must not be negative"}},
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

func TestSecretFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("secrets/cs", "\n  cs-value \n")
	abs := write("elsewhere/token", "tok-value\n")
	write("secrets/blank", " \n\t\n")
	creds := "api:\n  base_url: https://a.example\n  token_url: https://a.example/t\n  client_id: id\n"

	tests := []struct {
		name, src  string
		check      func(*Config) string
		wantProblm string
	}{
		{"relative to the config file", creds + "  client_secret_file: secrets/cs\n", func(c *Config) string {
			return c.API.ClientSecret + " " + c.API.ClientSecretFile
		}, ""},
		{"absolute", "api:\n  base_url: https://a.example\n  token_file: " + abs + "\n", func(c *Config) string {
			return c.API.Token + " " + c.API.TokenFile
		}, ""},
		{"missing file", creds + "  client_secret_file: secrets/nope\n", nil, "5: api.client_secret_file: read secret: open "},
		{"empty file", creds + "  client_secret_file: secrets/blank\n", nil, "5: api.client_secret_file: secret file "},
		{"both forms", creds + "  client_secret: x\n  client_secret_file: secrets/cs\n", nil,
			"6: api.client_secret_file: set client_secret or client_secret_file, not both"},
		{"both token forms", "api:\n  base_url: https://a.example\n  token: x\n  token_file: " + abs + "\n", nil,
			"4: api.token_file: set token or token_file, not both"},
	}
	wantValue := map[string]string{
		"relative to the config file": "cs-value " + filepath.Join(dir, "secrets/cs"),
		"absolute":                    "tok-value " + abs,
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := testLoader(nil).Parse(filepath.Join(dir, "feeds.yaml"), []byte(tt.src))
			if tt.wantProblm == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := tt.check(cfg); got != wantValue[tt.name] {
					t.Errorf("got %q, want %q", got, wantValue[tt.name])
				}
				return
			}
			var probs *Problems
			if !errors.As(err, &probs) || len(probs.List) != 1 {
				t.Fatalf("got %v, want one problem", err)
			}
			p := probs.List[0]
			if got := fmt.Sprintf("%d: %s: %s", p.Line, p.Field, p.Msg); !strings.HasPrefix(got, tt.wantProblm) {
				t.Errorf("got %q, want %q", got, tt.wantProblm)
			}
		})
	}
}

func TestLineAndProblem(t *testing.T) {
	t.Parallel()
	src := head + `defaults:
  type_rules:
    - when: bad(
      type: event
feeds:
  - id: a
    url: https://e.example/a
  - id: b
    url: https://e.example/b
    type_rules:
      - when: also bad(
        type: link
`
	cfg := mustParse(t, src, nil)
	tests := []struct {
		field     string
		wantField string
		wantLine  int
	}{
		{"api.base_url", "api.base_url", 2},
		{"api.timeout", "api.timeout", 1},    // not in the file: its section
		{"http.timeout", "http.timeout", 0},  // nothing of it in the file
		{"feeds[1].url", "feeds[1].url", 12}, // the feed's own
		{"feeds[1].type_rules[0].when", "feeds[1].type_rules[0].when", 14},
		{"feeds[0].type_rules[0].when", "defaults.type_rules[0].when", 6}, // inherited
		{"feeds[0].type_rules[0]", "defaults.type_rules[0]", 6},
		{"feeds[0].title_max", "feeds[0].title_max", 9}, // built-in default: the feed
		{"feeds[0].include.fields[0]", "feeds[0].include.fields[0]", 9},
		{"feeds[7].url", "feeds[7].url", 8}, // no such feed: the list
	}
	for _, tt := range tests {
		if got := cfg.Line(tt.field); got != tt.wantLine {
			t.Errorf("Line(%q): got %d, want %d", tt.field, got, tt.wantLine)
		}
		p := cfg.Problem(tt.field, "msg")
		if p.Field != tt.wantField || p.Line != tt.wantLine || p.File != "feeds.yaml" {
			t.Errorf("Problem(%q): got %+v, want field %q at line %d", tt.field, p, tt.wantField, tt.wantLine)
		}
	}

	// The worker adds transform's errors like this; the same inherited
	// problem on every feed is reported once.
	var probs Problems
	probs.Add(cfg, "feeds[0].type_rules[0].when", "unexpected token")
	probs.Add(cfg, "feeds[1].type_rules[0].when", "unexpected token")
	probs.Add(cfg, "feeds[2].type_rules[0].when", "unexpected token")
	want := "feeds.yaml:6: defaults.type_rules[0].when: unexpected token\nfeeds.yaml:14: feeds[1].type_rules[0].when: unexpected token"
	if got := probs.Err().Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestCheckHook(t *testing.T) {
	t.Parallel()
	src := head + feed + "    type_rules:\n      - when: 'nonsense('\n        type: link\n  - id: b\n    url: nope\n"
	l := testLoader(nil)
	var sawInterval bool
	l.Check = func(cfg *Config, probs *Problems) {
		// Feeds are resolved when Check runs, even with problems elsewhere.
		sawInterval = cfg.Feeds[1].Interval != nil
		probs.Add(cfg, "feeds[0].type_rules[0].when", "unexpected token")
	}
	_, err := l.Parse("feeds.yaml", []byte(src))
	want := "feeds.yaml:8: feeds[0].type_rules[0].when: unexpected token\nfeeds.yaml:11: feeds[1].url: not an absolute http(s) or file URL (got \"nope\")"
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	if !sawInterval {
		t.Error("Check saw a feed without resolved settings")
	}

	l.Check = func(*Config, *Problems) {}
	if _, err := l.Parse("feeds.yaml", []byte(head+feed)); err != nil {
		t.Errorf("a Check that adds nothing: got %v", err)
	}
}

func TestProblemString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{File: "f.yaml", Line: 3, Field: "a.b", Msg: "bad"}, "f.yaml:3: a.b: bad"},
		{Problem{File: "f.yaml", Field: "a.b", Msg: "bad"}, "f.yaml: a.b: bad"},
		{Problem{File: "f.yaml", Line: 3, Msg: "bad"}, "f.yaml:3: bad"},
		{Problem{Line: 3, Field: "a", Msg: "bad"}, "line 3: a: bad"},
		{Problem{Msg: "bad"}, "bad"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.p, got, tt.want)
		}
	}
	var empty Problems
	if err := empty.Err(); err != nil {
		t.Errorf("empty Problems: Err() = %v, want nil", err)
	}
	var nilProbs *Problems
	if err := nilProbs.Err(); err != nil {
		t.Errorf("nil *Problems: Err() = %v, want nil", err)
	}
}
