package worker

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdminDeadLetterEndpoints: with the embedded store the admin server
// lists and retries dead letters for a caller naming the same store file,
// and refuses other stores, non-JSON posts and unclear requests.
func TestAdminDeadLetterEndpoints(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig("../examples/quickstart.yaml", "test")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg.Store.Path = filepath.Join(dir, "quickstart.db")
	cfg.API.SandboxData = ""
	cfg.Admin.Listen = ""
	w := newWorker(t, cfg, Options{})
	srv := httptest.NewServer(w.admin().Handler())
	defer srv.Close()

	do := func(method, path, ctype, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	// The caller's path may be relative to another directory: the worker
	// compares files, not strings.
	abs := AbsStorePath(cfg.Store.Path)
	store := `"store":"` + abs + `"`
	tests := []struct {
		name, method, path, ctype, body string
		status                          int
		want                            string
	}{
		{"list", "GET", "/deadletters?store=" + url.QueryEscape(abs), "", "", 200, `"dead_letters":[]`},
		{"list of another store", "GET", "/deadletters?store=" + url.QueryEscape(filepath.Join(dir, "other.db")), "", "", 409, "this worker's store is"},
		{"retry all", "POST", "/deadletters/retry", "application/json", "{" + store + `,"all":true}`, 200, `"queued":0`},
		{"retry an unknown id", "POST", "/deadletters/retry", "application/json", "{" + store + `,"ids":["news/x"]}`, 404, "no such dead letter"},
		{"retry without ids or all", "POST", "/deadletters/retry", "application/json", "{" + store + "}", 400, "give ids or all"},
		{"retry as a form", "POST", "/deadletters/retry", "application/x-www-form-urlencoded", "all=true", 415, "JSON"},
		{"retry with unknown fields", "POST", "/deadletters/retry", "application/json", "{" + store + `,"everything":true}`, 400, "unknown field"},
		{"retry by GET", "GET", "/deadletters/retry", "", "", 405, ""},
	}
	for _, tt := range tests {
		status, body := do(tt.method, tt.path, tt.ctype, tt.body)
		if status != tt.status || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %q, want %d with %q", tt.name, status, body, tt.status, tt.want)
		}
	}
}

// TestAdminDeadLetterRetryWantsToken: with admin.token set, the JSON
// retry is an admin action like the console's: refused without the token
// or with a wrong one, done with it as a bearer token.
func TestAdminDeadLetterRetryWantsToken(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig("../examples/quickstart.yaml", "test")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store.Path = filepath.Join(t.TempDir(), "quickstart.db")
	cfg.API.SandboxData = ""
	cfg.Admin.Listen = ""
	cfg.Admin.Token = "the-admin-token"
	w := newWorker(t, cfg, Options{})
	srv := httptest.NewServer(w.admin().Handler())
	defer srv.Close()
	body := `{"store":"` + AbsStorePath(cfg.Store.Path) + `","all":true}`
	for _, tt := range []struct {
		name, auth string
		status     int
		want       string
	}{
		{"no token", "", 401, "not allowed"},
		{"wrong token", "Bearer nope", 401, "not allowed"},
		{"not a bearer", "Basic dGhlLWFkbWluLXRva2Vu", 401, "not allowed"},
		{"the token", "Bearer the-admin-token", 200, `"queued":0`},
	} {
		req, err := http.NewRequest("POST", srv.URL+"/deadletters/retry", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.want) {
			t.Errorf("%s: %d %q, want %d with %q", tt.name, resp.StatusCode, b, tt.status, tt.want)
		}
		if strings.Contains(string(b), "the-admin-token") {
			t.Errorf("%s: the answer shows the token", tt.name)
		}
	}
}
