package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/internal/syncbuf"
	"github.com/feedworker/feedworker/sandbox"
)

// storeCommands are the commands that open the store, with the arguments
// each needs besides --config; "ID" stands for an argument after the flags.
var storeCommands = [][]string{
	{"run"},
	{"once"},
	{"backfill", "--feed", "news", "--since", "2000-01-01"},
	{"deadletters", "list"},
	{"deadletters", "retry", "--all"},
	{"deadletters", "retry", "ID"},
}

// storeCommand is args with --config cfg and a quiet log, IDs last.
func storeCommand(args []string, cfg string) []string {
	var out, ids []string
	for _, a := range args {
		if a == "ID" {
			ids = append(ids, "news/x")
		} else {
			out = append(out, a)
		}
	}
	return append(append(out, "--config", cfg, "--log-level", "error"), ids...)
}

// TestLockedStoreIsAClearError holds the embedded store's lock, as a
// running worker does, and runs every command that opens the store: each
// fails with exit 1 and a message naming the file and the lock, never a
// panic (a panic would end this test binary).
func TestLockedStoreIsAClearError(t *testing.T) {
	t.Parallel()
	_, cfg := cliEnv(t, 1, "  - id: news\n    url: FEED\n")
	path := filepath.Join(filepath.Dir(cfg), "s.db")
	held, err := dedupe.OpenBolt(path, dedupe.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() })
	for _, args := range storeCommands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			code, _, errOut := runCLI(t, storeCommand(args, cfg)...)
			if code != 1 || !strings.Contains(errOut, "embedded store "+path) ||
				!strings.Contains(errOut, "locked by another process") || !strings.Contains(errOut, "stop it first") {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 1 naming %s and its lock", code, errOut, path)
			}
		})
	}
}

// TestUnwritableStoreIsAClearError points store.path below a regular
// file, where no store can be created (the tests may run as root, so a
// read-only directory would not stop them).
func TestUnwritableStoreIsAClearError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "plain", "not a directory")
	path := filepath.Join(dir, "plain", "s.db")
	cfg := writeFile(t, dir, "c.yaml", fmt.Sprintf(`api:
  base_url: embedded
store:
  path: %s
admin:
  listen: ""
feeds:
  - id: news
    url: file:%s
`, path, filepath.Join(dir, "plain")))
	for _, args := range storeCommands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			code, _, errOut := runCLI(t, storeCommand(args, cfg)...)
			if code != 1 || !strings.Contains(errOut, "embedded store "+path) || !strings.Contains(errOut, "not a directory") {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 1 naming %s and the cause", code, errOut, path)
			}
		})
	}
}

// TestDeadLettersThroughARunningWorker runs a worker on the embedded store
// while the API refuses its items, then lists and retries the dead letters
// from the command line while the worker holds the store's lock: the
// command asks the worker through its admin endpoint, and the worker
// delivers what was queued. Other commands that need the file say it is
// locked.
func TestDeadLettersThroughARunningWorker(t *testing.T) {
	t.Parallel()
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The API refuses every story until told otherwise, as a service
	// refuses a field it does not accept until the config is fixed.
	var refuse atomic.Bool
	refuse.Store(true)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() && r.Method == http.MethodPost && r.URL.Path == "/v3/story" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintln(w, `{"error":{"message":"refused for this test"}}`)
			return
		}
		sb.ServeHTTP(w, r)
	}))
	t.Cleanup(api.Close)
	farm := httptest.NewServer(feedfarm.New(feedfarm.Options{Feeds: 1, Items: 2, Seed: 1}))
	t.Cleanup(farm.Close)
	dir := t.TempDir()
	admin := freeAddr(t)
	workerCfg := fmt.Sprintf(`api:
  base_url: %s
  token_url: %s/oauth/token
  client_id: sandbox
  client_secret: sandbox-secret
store:
  path: %s
admin:
  listen: %s
feeds:
  - id: news
    url: %s
`, api.URL, api.URL, filepath.Join(dir, "s.db"), admin, feedfarm.URL(farm.URL, 0))
	cfg := writeFile(t, dir, "c.yaml", workerCfg)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var logs syncbuf.Buffer
	go func() { done <- cmdRun(ctx, []string{"--config", cfg, "--log-level", "error"}, &logs, &logs) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v\n%s", err, logs.String())
		}
	}
	t.Cleanup(stop)

	waitUntil(t, "2 dead letters listed through the running worker", func() (bool, string) {
		code, out, errOut := runCLI(t, "deadletters", "list", "--config", cfg)
		return code == 0 && strings.Contains(out, "2 dead letters") && strings.Contains(out, "refused for this test"), out + errOut
	})

	// once needs the file itself: it says why it cannot have it.
	if code, _, errOut := runCLI(t, "once", "--config", cfg, "--log-level", "error"); code != 1 || !strings.Contains(errOut, "locked by another process") {
		t.Errorf("once beside a running worker: exit %d, stderr %q; want 1 and the lock", code, errOut)
	}
	// A config naming another store file is not answered by this worker:
	// that file does not exist, so it holds no dead letters.
	other := writeFile(t, dir, "other.yaml", strings.Replace(workerCfg, "s.db", "other.db", 1))
	if code, out, errOut := runCLI(t, "deadletters", "list", "--config", other, "--log-level", "error"); code != 0 || !strings.Contains(out, "0 dead letters") {
		t.Errorf("deadletters list of another store: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "deadletters", "retry", "--config", cfg, "news/nope"); code != 1 || !strings.Contains(errOut, "no such dead letter") {
		t.Errorf("retry of an unknown id through the worker: exit %d, %q", code, errOut)
	}

	refuse.Store(false)
	code, out, errOut := runCLI(t, "deadletters", "retry", "--config", cfg, "--all")
	if code != 0 || !strings.Contains(out, "2 dead letters queued again") || !strings.Contains(out, "the running worker delivers them now") {
		t.Fatalf("deadletters retry --all beside a running worker: exit %d\n%s%s", code, out, errOut)
	}
	waitUntil(t, "the running worker to deliver the retried items", func() (bool, string) {
		n := len(sb.AllContent())
		return n == 2, fmt.Sprintf("the API holds %d items", n)
	})
	if code, out, _ := runCLI(t, "deadletters", "list", "--config", cfg); code != 0 || !strings.Contains(out, "0 dead letters") {
		t.Errorf("after the retry: exit %d\n%s", code, out)
	}
	stop()
	// With the worker stopped the command opens the file itself.
	if code, out, errOut := runCLI(t, "deadletters", "list", "--config", cfg); code != 0 || !strings.Contains(out, "0 dead letters") {
		t.Errorf("deadletters list after the worker stopped: exit %d\n%s%s", code, out, errOut)
	}
}

// waitUntil polls cond until it holds, with a generous deadline.
func waitUntil(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited for %s; last state:\n%s", what, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
