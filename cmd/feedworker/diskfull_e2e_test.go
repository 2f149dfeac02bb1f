//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/sandbox"
)

// TestEmbeddedStoreDiskFull runs a worker on the embedded store, then
// takes the room to write away from it for real: its file size limit
// (RLIMIT_FSIZE, lowered on the running process with prlimit) goes to 0,
// so every write of the store file fails with EFBIG ("file too large"),
// as writes fail on a full disk, while the feeds change. The worker logs
// one WARN naming the store file and the cause, feedworker_store_up goes
// 0, no feed is fetched meanwhile; when the limit is lifted (room
// returns) writes resume and every item is on the API exactly once.
func TestEmbeddedStoreDiskFull(t *testing.T) {
	const feeds = 8
	e := newE2E(t, feedfarm.Options{Feeds: feeds, Items: 5, Seed: 23}, sandbox.Faults{})
	admin := freeAddr(t)
	storePath := filepath.Join(e.dir, "full.db")
	var b strings.Builder
	fmt.Fprintf(&b, `api:
  base_url: %s
  token_url: %s/oauth/token
  client_id: sandbox
  client_secret: sandbox-secret
store:
  path: %s
http:
  min_interval: 200ms
publish:
  workers: 4
  shutdown_grace: 2s
  max_backoff: 1s
admin:
  listen: %q
log:
  level: debug
defaults:
  interval: 300ms
  initial_items: 1000
feeds:
`, e.sbURL, e.sbURL, storePath, admin)
	for i := range feeds {
		fmt.Fprintf(&b, "  - id: farm-%d\n    url: %s\n", i, feedfarm.URL(e.farmURL, i))
	}
	cfg := filepath.Join(e.dir, "full.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	// The log goes through a pipe (a writer that is not an *os.File):
	// the limit applies to regular files only, so the worker can still
	// tell what happens.
	logPath := filepath.Join(e.dir, "full.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(e.bin, "run", "--config", cfg)
	cmd.Stdout = struct{ io.Writer }{logf}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("worker log (its end):\n%s", b[max(0, len(b)-6000):])
		}
	})
	pid := cmd.Process.Pid

	var room unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &room); err != nil {
		t.Fatalf("read the worker's file size limit: %v", err)
	}
	full := unix.Rlimit{Cur: 0, Max: room.Max}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &full, nil); errors.Is(err, unix.EPERM) && os.Getenv("CI") != "true" {
		t.Skipf("cannot lower the worker's file size limit (prlimit: %v): the disk-full simulation needs it", err)
	} else if err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	// Room again until the first items are in.
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &room, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}

	served := map[string]bool{}
	noteServed := func() {
		for _, g := range e.farm.GUIDs() {
			served[g] = true
		}
	}
	noteServed()
	allOnAPI := func() bool { return distinctOnAPI(e.sb) >= len(served) }
	waitFor(t, 90*time.Second, "the first items on the API", allOnAPI)
	storeUp := func() float64 { return scrapeGauge(t, "http://"+admin+"/metrics", "feedworker_store_up") }

	logf.Sync()
	logStart := fileSize(t, logPath)
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &full, nil); err != nil {
		t.Fatalf("prlimit (disk full): %v", err)
	}
	e.farm.Change(0.5, 1)
	noteServed()
	waitFor(t, 30*time.Second, "feedworker_store_up 0", func() bool { return storeUp() == 0 })
	// Polls already under way when the store went down may still fetch;
	// nothing starts after.
	time.Sleep(500 * time.Millisecond)
	fetchesAtDown := e.farm.Requests()
	e.farm.Change(0.5, 2) // the feeds change while the store cannot write
	noteServed()
	waitFor(t, 10*time.Second, "/readyz 503 naming the store", func() bool {
		code, body := readyz(admin)
		return code == http.StatusServiceUnavailable && strings.Contains(body, "store: ")
	})
	time.Sleep(4 * time.Second)
	if n := e.farm.Requests() - fetchesAtDown; n != 0 {
		t.Errorf("%d feed requests while the store could not write; want none", n)
	}

	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &room, nil); err != nil {
		t.Fatalf("prlimit (room again): %v", err)
	}
	back := time.Now()
	waitFor(t, 60*time.Second, "every item on the API after room returned", allOnAPI)
	t.Logf("every item (%d) on the API %s after room returned", len(served), time.Since(back).Round(10*time.Millisecond))
	waitFor(t, 10*time.Second, "feedworker_store_up 1", func() bool { return storeUp() == 1 })

	// One WARN tells the outage, naming the store file and the cause.
	logf.Sync()
	lines := warnLines(t, logPath, logStart)
	var told []string
	for _, l := range lines {
		if strings.Contains(l, "store cannot write") {
			told = append(told, l)
		}
	}
	if len(told) != 1 || !strings.Contains(told[0], storePath) || !strings.Contains(told[0], "file too large") {
		t.Errorf("WARN lines telling the outage: %q; want one, naming %s and \"file too large\"", told, storePath)
	}
	if len(lines) > outageLogBound {
		t.Errorf("%d WARN/ERROR lines for one outage; want at most %d:\n%s", len(lines), outageLogBound, strings.Join(lines, "\n"))
	} else {
		t.Logf("%d WARN/ERROR lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}

	stopAt := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("worker after SIGTERM: %v", err)
		}
		t.Logf("SIGTERM to exit: %s", time.Since(stopAt).Round(10*time.Millisecond))
	case <-time.After(stopBound):
		t.Errorf("the worker did not exit within %s of SIGTERM", stopBound)
	}
	e.assertExactlyOnce(len(served))
}
