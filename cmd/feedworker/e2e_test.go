package main

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/sandbox"
)

// e2eVersion is the version linked into the binary the e2e tests build.
const e2eVersion = "v0.0.0-e2e"

// buildBinary builds feedworker once per test run.
var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "feedworker-e2e-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "feedworker")
	// The version is linked in as the Makefile does (TestVersionFromTheBuild).
	out, err := exec.Command("go", "build", "-ldflags", "-X main.version="+e2eVersion, "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// e2e is one end-to-end setup: a feed farm, a sandbox and a Redis prefix.
type e2e struct {
	t       *testing.T
	bin     string
	farm    *feedfarm.Farm
	farmURL string
	sb      *sandbox.Server
	sbURL   string
	redis   *redis.Client
	prefix  string
	dir     string
	workers int // publish.workers in the configs written
	// redisURL is the Redis the configs name (default: the shared one).
	redisURL string
	// redisYAML, when set, replaces "url: <redisURL>" in the configs'
	// redis section (indented lines: a cluster or Sentinel topology).
	redisYAML string
	// storePath, when set, puts the configs on the embedded store in this
	// file instead of Redis.
	storePath string
}

func redisURL() string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

func newE2E(t *testing.T, farm feedfarm.Options, faults sandbox.Faults) *e2e {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	opts, err := redis.ParseURL(redisURL())
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(opts)
	t.Cleanup(func() { rc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rc.Ping(ctx).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis at %s: %v", redisURL(), err)
		}
		t.Skipf("no Redis at %s (set REDIS_URL): %v", redisURL(), err)
	}
	b := make([]byte, 6)
	_, _ = crand.Read(b)
	e := &e2e{t: t, bin: bin, redis: rc, prefix: "fw-e2e-" + hex.EncodeToString(b) + ":", dir: t.TempDir(), workers: 4, redisURL: redisURL()}
	t.Cleanup(e.cleanRedis)

	e.farm = feedfarm.New(farm)
	fs := httptest.NewServer(e.farm)
	t.Cleanup(fs.Close)
	e.farmURL = fs.URL

	e.sb, err = sandbox.New(sandbox.Options{Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	ss := httptest.NewServer(e.sb)
	t.Cleanup(ss.Close)
	e.sbURL = ss.URL
	return e
}

func (e *e2e) cleanRedis() {
	ctx := context.Background()
	iter := e.redis.Scan(ctx, 0, e.prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if len(keys) > 0 {
		e.redis.Del(ctx, keys...)
	}
}

// config writes a worker config for the farm's feeds and returns its path.
func (e *e2e) config(name, adminAddr string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `api:
  base_url: %s
  token_url: %s/oauth/token
  client_id: sandbox
  client_secret: sandbox-secret
%s
http:
  min_interval: 200ms
publish:
  workers: %d
  claim_ttl: 2s
  lease_ttl: 1s
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
`, e.sbURL, e.sbURL, e.storeSection(), e.workers, adminAddr)
	for i := range e.farmFeeds() {
		fmt.Fprintf(&b, "  - id: farm-%d\n    url: %s\n", i, feedfarm.URL(e.farmURL, i))
	}
	path := filepath.Join(e.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path
}

// storeSection is the configs' store: Redis under the test's prefix, or
// the embedded store's file.
func (e *e2e) storeSection() string {
	if e.storePath != "" {
		return fmt.Sprintf("store:\n  path: %q", e.storePath)
	}
	return fmt.Sprintf("redis:\n%s  prefix: %q", e.redisSection(), e.prefix)
}

func (e *e2e) redisSection() string {
	if e.redisYAML != "" {
		return e.redisYAML
	}
	return "  url: " + e.redisURL + "\n"
}

func (e *e2e) farmFeeds() []int {
	n := 0
	for _, g := range e.farm.GUIDs() {
		if strings.HasSuffix(g, ":0") {
			n++
		}
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// start runs the binary with args; its output goes to a log file.
func (e *e2e) start(name string, args ...string) *exec.Cmd {
	e.t.Helper()
	logf, err := os.OpenFile(filepath.Join(e.dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command(e.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		logf.Close()
		if e.t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			e.t.Logf("%s log (its end):\n%s", name, b[max(0, len(b)-4000):])
		}
	})
	return cmd
}

// distinct checks the sandbox holds exactly one item per farm item.
func (e *e2e) assertExactlyOnce(want int) {
	e.t.Helper()
	items := e.sb.AllContent()
	byExt := map[string]int{}
	for _, it := range items {
		byExt[it.ExternalID]++
	}
	var dups []string
	for id, n := range byExt {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("%s×%d", id, n))
		}
	}
	if len(dups) > 0 {
		e.t.Errorf("duplicates on the API: %v", dups)
	}
	if len(byExt) != want {
		e.t.Errorf("distinct items on the API = %d, want %d (total %d)", len(byExt), want, len(items))
	}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", timeout, what)
}

// TestKillRestart kills the worker with SIGKILL at random points while it
// publishes, 20 times, then lets it finish: every item is on the API once.
// On the embedded store the kills also land between a delivery and the
// commit of its outcome handed over (publish/handover.go).
func TestKillRestart(t *testing.T) {
	for _, store := range []string{"redis", "embedded"} {
		t.Run(store, func(t *testing.T) { testKillRestart(t, store) })
	}
}

func testKillRestart(t *testing.T, store string) {
	// Publishing all items takes several seconds (240 items, 40 ms each, two
	// at a time), so most kills land while items are being sent.
	e := newE2E(t, feedfarm.Options{Feeds: 4, Items: 60, Seed: 3}, sandbox.Faults{Latency: 40 * time.Millisecond})
	e.workers = 2
	if store == "embedded" {
		e.storePath = filepath.Join(e.dir, "kill.db")
	}
	cfg := e.config("kill", "")
	want := 4 * 60
	rng := rand.New(rand.NewPCG(42, 42))
	midPublish := 0
	for i := 0; i < 20; i++ {
		before := len(e.sb.AllContent())
		cmd := e.start("kill", "run", "--config", cfg)
		if i%2 == 0 {
			// Killed at a random moment of its start or its first sends.
			time.Sleep(time.Duration(150+rng.IntN(500)) * time.Millisecond)
		} else {
			// Killed once this process has published, then at a random
			// moment after: a point in its work, not in time, so that
			// a start slowed by a busy machine is waited for rather
			// than killed before it sends anything, every time.
			waitFor(t, 2*time.Minute, "the restarted worker to publish", func() bool {
				n := len(e.sb.AllContent())
				return n > before || n >= want
			})
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if n := len(e.sb.AllContent()); n > 0 && n < want {
			midPublish++
		}
	}
	t.Logf("after 20 kills: %d of %d items on the API; %d kills landed mid-publish", len(e.sb.AllContent()), want, midPublish)
	if midPublish < 5 {
		t.Errorf("only %d kills landed while items were being published; the test did not test much", midPublish)
	}
	// Claims and leases of the killed processes expire; then one clean run
	// must deliver the rest.
	time.Sleep(2500 * time.Millisecond)
	finalStart := time.Now()
	cmd := e.start("final", "run", "--config", cfg)
	waitFor(t, 60*time.Second, fmt.Sprintf("%d items on the API", want), func() bool {
		return len(e.sb.AllContent()) >= want
	})
	t.Logf("the final run delivered the rest in %s", time.Since(finalStart).Round(time.Millisecond))
	time.Sleep(time.Second) // anything still in flight would show as a duplicate
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("final run after SIGTERM: %v (log %s)", err, filepath.Join(e.dir, "final.log"))
	}
	e.assertExactlyOnce(want)
}

// TestThreeReplicas runs three workers on one Redis and one feed set: every
// item is published once, no feed is polled by two at the same time, and
// the polls spread over the replicas.
func TestThreeReplicas(t *testing.T) {
	// A third of the writes are applied but answered 500: the replicas must
	// recover each by external_id, never post it again.
	e := newE2E(t, feedfarm.Options{Feeds: 12, Items: 5, Seed: 5, Latency: 20 * time.Millisecond}, sandbox.Faults{CommitThenFail: 0.3, Seed: 7})
	want := 12 * 5
	var cmds []*exec.Cmd
	var admins []string
	for i := 0; i < 3; i++ {
		addr := freeAddr(t)
		admins = append(admins, addr)
		cmds = append(cmds, e.start(fmt.Sprintf("replica-%d", i), "run", "--config", e.config(fmt.Sprintf("replica-%d", i), addr)))
	}
	waitFor(t, 60*time.Second, fmt.Sprintf("%d items on the API", want), func() bool {
		return len(e.sb.AllContent()) >= want
	})
	time.Sleep(1500 * time.Millisecond) // several more poll rounds by every replica
	polled := 0
	for _, addr := range admins {
		if n := scrapeCounter(t, "http://"+addr+"/metrics", "feedworker_polls_total"); n > 0 {
			polled++
		}
	}
	for i, cmd := range cmds {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("replica %d after SIGTERM: %v", i, err)
		}
	}
	e.assertExactlyOnce(want)
	failedWrites := 0
	for _, r := range e.sb.Requests() {
		if r.Fault == "commit_then_fail" {
			failedWrites++
		}
	}
	if failedWrites == 0 {
		t.Error("no write was answered 500 after being applied; the fault did not fire")
	}
	t.Logf("%d writes were applied and answered 500; each was recovered by external_id", failedWrites)
	if got := e.farm.MaxConcurrentPolls(); got != 1 {
		t.Errorf("a feed was polled by %d workers at once, want 1", got)
	}
	if polled < 2 {
		t.Errorf("only %d of 3 replicas polled any feed; the work did not spread", polled)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// scrapeCounter sums a counter's samples from a /metrics page, waiting for
// the server to come up.
func scrapeCounter(t *testing.T, url, name string) float64 {
	t.Helper()
	var resp *http.Response
	var err error
	for i := 0; i < 50; i++ {
		if resp, err = http.Get(url); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
				sum += v
			}
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return sum
}

// TestRedisRestartUnderAWorker stops a private Redis (with persistence)
// while a worker process publishes, then starts it again: the worker waits,
// resumes by itself, and every item ends up on the API once.
func TestRedisRestartUnderAWorker(t *testing.T) {
	srv := dedupetest.StartServer(t)
	e := newE2E(t, feedfarm.Options{Feeds: 4, Items: 40, Seed: 9}, sandbox.Faults{Latency: 20 * time.Millisecond})
	e.redisURL = "redis://" + srv.Addr() + "/0"
	e.workers = 2
	want := 4 * 40
	cmd := e.start("redis-restart", "run", "--config", e.config("redis-restart", ""))
	waitFor(t, 30*time.Second, "publishing to start", func() bool { return len(e.sb.AllContent()) > 10 })
	srv.Stop()
	stoppedAt := len(e.sb.AllContent())
	time.Sleep(1500 * time.Millisecond) // polls and deliveries fail meanwhile
	srv.Start()
	t.Logf("Redis was down for 1.5 s with %d of %d items published", stoppedAt, want)
	waitFor(t, 60*time.Second, fmt.Sprintf("%d items after Redis came back", want), func() bool {
		return len(e.sb.AllContent()) >= want
	})
	time.Sleep(time.Second)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("worker after SIGTERM: %v (log %s)", err, filepath.Join(e.dir, "redis-restart.log"))
	}
	e.assertExactlyOnce(want)
	if stoppedAt >= want {
		t.Errorf("everything was published before Redis stopped; the test proved nothing")
	}
}
