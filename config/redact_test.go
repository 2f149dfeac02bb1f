package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// secretConfig holds a secret in every place one can be.
func secretConfig(t *testing.T) *Config {
	t.Helper()
	src := `api:
  base_url: https://apiuser:basepw@api.example.com
  token_url: https://tokenuser:tokenurlpw@auth.example.com/token
  client_id: the-client
  client_secret: ${SECRET}
redis:
  url: redis://user:redispw@redis.internal:6379/0
http:
  proxy: http://proxyuser:proxypw@proxy.internal:3128
feeds:
  - id: private
    url: https://feeduser:feedpw@example.com/feed.xml
`
	return mustParse(t, src, map[string]string{"SECRET": "clientsecretvalue"})
}

var secrets = []string{"clientsecretvalue", "basepw", "tokenurlpw", "redispw", "proxypw", "feedpw"}

func TestRedacted(t *testing.T) {
	t.Parallel()
	cfg := secretConfig(t)
	r := cfg.Redacted()
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(string(out), s) {
			t.Errorf("Redacted() still holds %q: %s", s, out)
		}
	}
	if r.API.ClientSecret != RedactedValue || r.API.ClientID != "the-client" {
		t.Errorf("api: got secret %q, id %q", r.API.ClientSecret, r.API.ClientID)
	}
	if got, want := r.Redis.URL, "redis://xxxxx@redis.internal:6379/0"; got != want {
		t.Errorf("redis url: got %q, want %q", got, want)
	}
	// The original is untouched, and shares nothing with the copy.
	if cfg.API.ClientSecret != "clientsecretvalue" || !strings.Contains(cfg.Feeds[0].URL, "feedpw") {
		t.Error("Redacted changed the original")
	}
	*r.Feeds[0].Interval = 1
	if *cfg.Feeds[0].Interval == 1 {
		t.Error("Redacted shares pointers with the original")
	}
	if r.Line("feeds[0].url") != cfg.Line("feeds[0].url") || r.File != cfg.File {
		t.Error("Redacted lost the file and lines")
	}
	var nilCfg *Config
	if nilCfg.Redacted() != nil {
		t.Error("nil.Redacted() is not nil")
	}
}

// TestLoggingHidesSecrets logs and prints a configuration every way a
// caller might, and looks for the secrets in the output. Feed URLs are not
// covered here: they are logged as they are, for lack of a place to hook.
func TestLoggingHidesSecrets(t *testing.T) {
	t.Parallel()
	cfg := secretConfig(t)
	var buf bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&buf, nil), slog.NewJSONHandler(&buf, nil)} {
		log := slog.New(h)
		log.Info("pointer", "config", cfg)
		log.Info("value", "config", *cfg)
		log.Info("sections", "api", cfg.API, "redis", cfg.Redis, "http", cfg.HTTP)
	}
	fmt.Fprintf(&buf, "%v %+v %s\n", cfg.API, cfg.Redis, cfg.HTTP)
	fmt.Fprintf(&buf, "%v %+v\n", cfg.API, *cfg)
	buf.WriteString(cfg.Summary())
	out := buf.String()
	for _, s := range secrets[:5] {
		if strings.Contains(out, s) {
			t.Errorf("output holds %q:\n%s", s, out)
		}
	}
	for _, want := range []string{"the-client", "redis.internal", "api.example.com", "Timeout:30s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q, which is not a secret:\n%s", want, out)
		}
	}
}

func TestSummary(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, head+feed+"  - id: b\n    url: https://e.example/b\n    enabled: false\nredis:\n  url: redis://:pw@r:6379\n", nil)
	want := "feeds.yaml: 2 feeds (1 enabled), api https://api.example.com (token), store redis redis://xxxxx@r:6379"
	if got := cfg.Summary(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := fmt.Sprint(cfg.API.Auth(), " ", cfg.API.Embedded()); got != "token false" {
		t.Errorf("Auth, Embedded: got %q", got)
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   fmt.Stringer
		want string
	}{
		{Duration(0), "0s"},
		{Duration(90e9), "1m30s"},
		{Duration(15 * 60e9), "15m"},
		{Duration(3600e9), "1h"},
		{Duration(5400e9), "1h30m"},
		{Duration(24 * 3600e9), "24h"},
		{Duration(90 * 24 * 3600e9), "90d"},
		{ByteSize(10 << 20), "10MiB"},
		{ByteSize(1 << 30), "1GiB"},
		{ByteSize(1536), "1536"},
		{ByteSize(0), "0"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("%#v: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"https://example.com/feed.xml":                  "https://example.com/feed.xml",
		"https://bob:hunter2@example.com/feed":          "https://xxxxx@example.com/feed",
		"https://ghp_token123@example.com/feed":         "https://xxxxx@example.com/feed",
		"https://example.com/feed?apikey=abc&lang=en":   "https://example.com/feed?apikey=redacted&lang=en",
		"https://example.com/f?Token=abc":               "https://example.com/f?Token=redacted",
		"file:///var/feeds/local.xml":                   "file:///var/feeds/local.xml",
		"http://user:pa ss@exa mple.com/\x7f":           "http://(unparseable)",
		"https://example.com/feed?access_token=x&sig=y": "https://example.com/feed?access_token=redacted&sig=redacted",
		"redis://:pw@r:6379/0":                          "redis://xxxxx@r:6379/0",
	}
	for in, want := range tests {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestConfigPrintsWithoutSecrets: fmt on a *Config (a %v in an error, a
// debug print) shows no secret, feed URLs included.
func TestConfigPrintsWithoutSecrets(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("f.yaml", []byte("api:\n  base_url: https://api.example.com\n  token_url: https://auth.example.com/t\n  client_id: c\n  client_secret: s3cret-one\nfeeds:\n  - id: a\n    url: https://u:s3cret-two@example.com/f?token=s3cret-three\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%v", *cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%+v", cfg.Feeds), fmt.Sprintf("%#v", cfg.Feeds)} {
		if strings.Contains(out, "s3cret") {
			t.Errorf("a secret is printed:\n%s", out)
		}
	}
}
