package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/sandbox"
)

// readyz returns /readyz's status and body ("" while the admin server is
// not up).
func readyz(addr string) (int, string) {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestBadRedisSettings starts a worker with each Redis setting wrong in its
// own way: each gives one clear error naming the setting and the cause, in
// the log at start and in /readyz, and the worker keeps running (and
// retrying) rather than exit. With the wrong password, the server is then
// changed to accept it: the worker recovers by itself and publishes every
// item once.
func TestBadRedisSettings(t *testing.T) {
	standalone := strings.TrimPrefix(strings.TrimSuffix(redisURL(), "/0"), "redis://")
	if u, err := url.Parse(redisURL()); err == nil {
		standalone = u.Host
	}
	sentinels, _ := dedupetest.SentinelAddrs(t)
	srv := dedupetest.StartServer(t)
	admin := redis.NewClient(srv.Options())
	t.Cleanup(func() { admin.Close() })
	ctx := context.Background()
	if err := admin.ConfigSet(ctx, "requirepass", "right-password").Err(); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, yaml, setting, cause string
	}{
		{"cluster address that is not a cluster", fmt.Sprintf("  mode: cluster\n  addrs: [%s]\n", standalone),
			"redis.mode", "not a Redis Cluster node"},
		{"sentinel master that does not exist", fmt.Sprintf("  mode: sentinel\n  addrs: [%s]\n  master_name: no-such-master\n", strings.Join(sentinels, ", ")),
			"redis.master_name", `"no-such-master"`},
		{"wrong password", fmt.Sprintf("  addrs: [%s]\n  password: wrong-password\n", srv.Addr()),
			"redis.password", "refused the credentials"},
		{"tls to a plain port", fmt.Sprintf("  addrs: [%s]\n  tls:\n    enabled: true\n    insecure_skip_verify: true\n", standalone),
			"redis.tls", "TLS"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newE2E(t, feedfarm.Options{Feeds: 2, Items: 5, Seed: 23 + uint64(i)}, sandbox.Faults{})
			e.redisYAML = tc.yaml
			addr := freeAddr(t)
			name := fmt.Sprintf("bad-%d", i)
			cmd := e.start(name, "run", "--config", e.config(name, addr))
			var body string
			waitFor(t, 60*time.Second, "/readyz to report the store", func() bool {
				var code int
				code, body = readyz(addr)
				return code == http.StatusServiceUnavailable && strings.Contains(body, "store: ")
			})
			t.Logf("/readyz:\n%s", body)
			if !strings.Contains(body, "store: "+tc.setting+": ") || !strings.Contains(body, tc.cause) {
				t.Errorf("/readyz does not name %s and %q:\n%s", tc.setting, tc.cause, body)
			}
			if strings.Contains(body, "wrong-password") {
				t.Error("/readyz shows the password")
			}
			logText, _ := os.ReadFile(filepath.Join(e.dir, name+".log"))
			if !strings.Contains(string(logText), tc.setting+": ") {
				t.Errorf("the log at start does not name %s:\n%s", tc.setting, logText)
			}
			if strings.Contains(string(logText), "wrong-password") {
				t.Error("the log shows the password")
			}
			if len(e.sb.AllContent()) != 0 {
				t.Errorf("%d items published without a store", len(e.sb.AllContent()))
			}
			if tc.setting == "redis.password" {
				// Fix the server side: the worker must recover alone and
				// lose nothing that its failed polls saw.
				if err := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: "right-password"}).ConfigSet(ctx, "requirepass", "wrong-password").Err(); err != nil {
					t.Fatal(err)
				}
				waitFor(t, 60*time.Second, "10 items after the password was accepted", func() bool { return len(e.sb.AllContent()) >= 10 })
				waitFor(t, 30*time.Second, "/readyz ready", func() bool { code, _ := readyz(addr); return code == http.StatusOK })
				time.Sleep(500 * time.Millisecond)
				e.assertExactlyOnce(10)
			}
			if cmd.ProcessState != nil {
				t.Fatalf("the worker exited: %v", cmd.ProcessState)
			}
			// A store that never answers makes a clean stop wait for its
			// timeouts; what a stop does is not under test here.
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
}
