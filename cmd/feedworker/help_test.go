package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/internal/syncbuf"
)

// TestHelpExitsZeroWithFlags: every command's --help shows its flags and
// exits 0, the commands with subcommands included.
func TestHelpExitsZeroWithFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want []string // in the help text
	}{
		{[]string{"run", "--help"}, []string{"-config"}},
		{[]string{"once", "-h"}, []string{"-config"}},
		{[]string{"preview", "--help"}, []string{"-feed", "-url"}},
		{[]string{"content", "--help"}, []string{"content list", "-config", "-external-id", "-json"}},
		{[]string{"content", "list", "--help"}, []string{"-config", "-type"}},
		{[]string{"deadletters", "--help"}, []string{"deadletters list|retry", "-config", "-all"}},
		{[]string{"deadletters", "-h"}, []string{"-config", "-all"}},
		{[]string{"deadletters", "retry", "--help"}, []string{"-config", "-all"}},
		{[]string{"backfill", "--help"}, []string{"-feed", "-since"}},
		{[]string{"sandbox", "--help"}, []string{"-addr", "-data"}},
		{[]string{"healthcheck", "--help"}, []string{"-url"}},
		{[]string{"bench", "--help"}, []string{"-feeds", "-redis-url"}},
	}
	for _, tt := range tests {
		code, out, errOut := runCLI(t, tt.args...)
		help := out + errOut
		if code != 0 {
			t.Errorf("%s: exit %d, want 0\n%s", strings.Join(tt.args, " "), code, help)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(help, w) {
				t.Errorf("%s: the help lacks %q:\n%s", strings.Join(tt.args, " "), w, help)
			}
		}
	}
	// bench names its Redis default once, not once from the text and
	// once from the flag package.
	_, _, help := runCLI(t, "bench", "--help")
	if n := strings.Count(help, "default $REDIS_URL") + strings.Count(help, "(default \"redis://"); n != 1 {
		t.Errorf("bench --help states the Redis default %d times:\n%s", n, help)
	}
	// Without a subcommand the usage is shown and the exit is 2.
	for _, cmd := range []string{"content", "deadletters"} {
		if code, _, errOut := runCLI(t, cmd); code != 2 || !strings.Contains(errOut, "-config") {
			t.Errorf("%s alone: exit %d, %q; want 2 and the usage", cmd, code, errOut)
		}
	}
}

// TestPreviewFailsWhenTheFetchFails: a feed that cannot be fetched makes
// preview exit 1 with the cause on stderr, as once does; the JSON still
// shows every feed.
func TestPreviewFailsWhenTheFetchFails(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/page" {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintln(w, "<!doctype html><html><body><p>Not a feed</p></body></html>")
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	missing := filepath.Join(t.TempDir(), "missing.xml")
	tests := []struct {
		name, url, want string
	}{
		{"404", srv.URL + "/feed", "404"},
		{"an HTML page", srv.URL + "/page", "parse feed"},
		{"a missing file", "file://" + missing, "file not found: " + missing},
	}
	for _, tt := range tests {
		code, out, errOut := runCLI(t, "preview", "--url", tt.url)
		if code != 1 || !strings.Contains(errOut, tt.want) || !strings.Contains(out, `"error"`) {
			t.Errorf("preview of %s: exit %d, stderr %q; want 1 and %q on stderr", tt.name, code, errOut, tt.want)
		}
	}
}

// TestSandboxLogsListeningOnce starts `feedworker sandbox` and reads its
// log after it stops.
func TestSandboxLogsListeningOnce(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	var logs syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- cmdSandbox(ctx, []string{"--addr", addr}, &logs, &logs) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Post("http://"+addr+"/oauth/token", "application/x-www-form-urlencoded", nil)
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "sandbox listening"); n != 1 || !strings.Contains(logs.String(), "token_url=http://"+addr+"/oauth/token") {
		t.Errorf("\"sandbox listening\" logged %d times, want once with the token URL:\n%s", n, logs.String())
	}
}

// TestPlurals: one of a thing is not "1 things".
func TestPlurals(t *testing.T) {
	t.Parallel()
	bad := writeFile(t, t.TempDir(), "bad.yaml", "api:\n  base_url: embedded\nfeeds:\n  - id: a\n    url: ftp://example.org/feed\n")
	code, out, _ := runCLI(t, "validate", "--config", bad)
	if code != 1 || !strings.Contains(out, ": 1 problem\n") {
		t.Errorf("validate with one problem: exit %d\n%s", code, out)
	}
	_, cfg := cliEnv(t, 1, "  - id: news\n    url: FEED\n")
	code, out, errOut := runCLI(t, "once", "--config", cfg, "--log-level", "error")
	if code != 0 || !strings.Contains(out, "1 configured, 1 poll (") || !strings.Contains(out, "1 story") {
		t.Errorf("once over one feed of one item: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "content", "list", "--config", cfg, "--log-level", "error")
	if code != 0 || !strings.HasSuffix(out, "\n1 item\n") {
		t.Errorf("content list of one item: exit %d\n%s", code, out)
	}
}
