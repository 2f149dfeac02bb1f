package config_test

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/transform"
)

// TestFullExampleLoads loads examples/full.yaml, the annotated example that
// fills REFERENCE.md's example column, with no environment at all, and
// compiles every feed's mapping the way the worker does (type_rules and
// category_rules expressions, filters, event and need paths). This is an
// external test package, so that it may import transform, which imports
// config.
func TestFullExampleLoads(t *testing.T) {
	l := config.Loader{
		LookupEnv: func(string) (string, bool) { return "", false },
		Version:   "test",
		Check:     compileMappings,
	}
	cfg, err := l.Load("../examples/full.yaml")
	if err != nil {
		t.Fatalf("examples/full.yaml does not load:\n%v", err)
	}

	// The ${VAR:-default} secrets fall back to their defaults, and the
	// alternatives written as ${VAR:-} stay unset.
	if cfg.API.ClientSecret != "change-me" || cfg.API.Token != "" || cfg.API.TokenFile != "" || cfg.API.ClientSecretFile != "" {
		t.Errorf("api secrets = %q, token %q, token_file %q, client_secret_file %q; want only the client_secret default",
			cfg.API.ClientSecret, cfg.API.Token, cfg.API.TokenFile, cfg.API.ClientSecretFile)
	}
	if got := cfg.API.Auth(); got != "client credentials" {
		t.Errorf("auth = %q, want client credentials", got)
	}
	if s := fmt.Sprint(cfg); strings.Contains(s, "change-me") {
		t.Errorf("the client secret shows in the config's String: %s", s)
	}

	// The bundled feed a file: URL names exists beside the example.
	for _, f := range cfg.Feeds {
		if u, err := url.Parse(f.URL); err == nil && u.Scheme == "file" {
			if _, err := os.Stat(u.Path); err != nil {
				t.Errorf("feed %s: %v", f.ID, err)
			}
		}
	}
}

// TestFullExampleWithEnvironment checks the file's comments on secrets: the
// environment variables they name replace the defaults, and a secret file
// replaces client_secret once client_secret is deleted.
func TestFullExampleWithEnvironment(t *testing.T) {
	env := map[string]string{
		"ACS_BASE_URL":      "https://acs.example.com",
		"ACS_CLIENT_SECRET": "s3cret",
		"REDIS_URL":         "",
	}
	l := config.Loader{
		LookupEnv: func(name string) (string, bool) { v, ok := env[name]; return v, ok },
		Version:   "test",
		Check:     compileMappings,
	}
	cfg, err := l.Load("../examples/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.API.BaseURL != "https://acs.example.com" || cfg.API.ClientSecret != "s3cret" {
		t.Errorf("base_url %q, client_secret %q: the environment was not used", cfg.API.BaseURL, cfg.API.ClientSecret)
	}
	if cfg.Redis.URL != "redis://redis:6379/0" {
		t.Errorf("redis.url = %q; an empty REDIS_URL should take the default", cfg.Redis.URL)
	}

	// Setting a token as well as client credentials is refused, as the
	// file's comment warns.
	env["ACS_TOKEN"] = "tok"
	if _, err := l.Load("../examples/full.yaml"); err == nil || !strings.Contains(err.Error(), "api.token") {
		t.Errorf("ACS_TOKEN with client credentials: err = %v, want a problem on api.token", err)
	}
}

// compileMappings reports transform's compile errors on every feed, as the
// worker's loader does.
func compileMappings(cfg *config.Config, problems *config.Problems) {
	for i, f := range cfg.Feeds {
		_, err := transform.Compile(f.ID, f.Mapping)
		if err == nil {
			continue
		}
		var ce *transform.CompileError
		if !errors.As(err, &ce) {
			problems.Add(cfg, fmt.Sprintf("feeds[%d]", i), err.Error())
			continue
		}
		for _, fe := range ce.Fields {
			problems.Add(cfg, fmt.Sprintf("feeds[%d].%s", i, fe.Path), fe.Err.Error())
		}
	}
}
