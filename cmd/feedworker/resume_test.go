package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/sandbox"
)

// TestKilledWorkersItemsResume kills a worker with SIGKILL while it
// publishes and starts another at once, ten times: every item reaches the
// API once, long before the killed worker's claims could expire (claim_ttl
// 5m, the default): the new worker takes them as soon as the killed one's
// heartbeat (lease_ttl) is gone.
func TestKilledWorkersItemsResume(t *testing.T) {
	const leaseTTL = 2 * time.Second
	var worst time.Duration
	for i := range 10 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			e := newE2E(t, feedfarm.Options{Feeds: 4, Items: 30, Seed: uint64(10 + i)}, sandbox.Faults{Latency: 40 * time.Millisecond})
			e.workers = 2
			cfg := e.config("resume", "")
			b, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			s := strings.Replace(string(b), "claim_ttl: 2s", "claim_ttl: 5m", 1)
			s = strings.Replace(s, "lease_ttl: 1s", fmt.Sprintf("lease_ttl: %s", leaseTTL), 1)
			if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
				t.Fatal(err)
			}
			want := 4 * 30
			a := e.start("a", "run", "--config", cfg)
			waitFor(t, time.Minute, "the first items on the API", func() bool { return len(e.sb.AllContent()) > 0 })
			_ = a.Process.Signal(syscall.SIGKILL)
			_ = a.Wait()
			killed := time.Now()
			if n := len(e.sb.AllContent()); n >= want {
				t.Skipf("the worker had published all %d items before it was killed", n)
			}
			b2 := e.start("b", "run", "--config", cfg)
			// Well under claim_ttl: only the heartbeat can make it.
			waitFor(t, 2*time.Minute, fmt.Sprintf("%d items on the API", want), func() bool { return len(e.sb.AllContent()) >= want })
			took := time.Since(killed)
			worst = max(worst, took)
			t.Logf("every item on the API %s after the kill (lease_ttl %s)", took.Round(time.Millisecond), leaseTTL)
			time.Sleep(500 * time.Millisecond) // a duplicate in flight would show
			_ = b2.Process.Signal(syscall.SIGTERM)
			if err := b2.Wait(); err != nil {
				t.Errorf("second worker after SIGTERM: %v (log %s)", err, filepath.Join(e.dir, "b.log"))
			}
			e.assertExactlyOnce(want)
		})
	}
	t.Logf("worst: every item on the API %s after the kill", worst.Round(time.Millisecond))
}
