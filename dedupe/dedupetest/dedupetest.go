// Package dedupetest gives tests a real Redis: the shared one at REDIS_URL
// with a key prefix of their own, or a private redis-server they start,
// stop and restart themselves.
package dedupetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultURL is used when REDIS_URL is not set.
const DefaultURL = "redis://127.0.0.1:6379/0"

// Redis returns a client for REDIS_URL (default [DefaultURL]) and a key
// prefix unique to the test; every key under the prefix is deleted when the
// test ends. With no Redis answering, the test is skipped, unless CI is
// "true": there a missing Redis is a failure, not a reason to pass.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = DefaultURL
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("REDIS_URL %q: %v", url, err)
	}
	c := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Redis at %s (REDIS_URL) and CI=true: %v", url, err)
		}
		t.Skipf("no Redis at %s; set REDIS_URL to run this test: %v", url, err)
	}
	prefix := "fwtest:" + randomHex() + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := DeletePrefix(ctx, c, prefix); err != nil {
			t.Errorf("clean up keys %s*: %v", prefix, err)
		}
		c.Close()
	})
	return c, prefix
}

// DeletePrefix deletes every key starting with prefix; on a Redis Cluster,
// on every master.
func DeletePrefix(ctx context.Context, c redis.UniversalClient, prefix string) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return deletePrefix(ctx, node, prefix)
		})
	}
	return deletePrefix(ctx, c, prefix)
}

func deletePrefix(ctx context.Context, c redis.UniversalClient, prefix string) error {
	iter := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
	var keys []string
	flush := func() error {
		// One UNLINK per key: on a cluster node, keys of several slots may
		// not go in one command.
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Unlink(ctx, k)
			}
			return nil
		})
		keys = keys[:0]
		return err
	}
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 500 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	if len(keys) > 0 {
		return flush()
	}
	return nil
}

// Server is a redis-server process owned by a test, with append-only
// persistence in a temporary directory, so a Stop and Start keep the data.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
	done chan error
}

// StartServer starts redis-server (from PATH) on a free port. The test is
// skipped when the binary is missing, unless CI is "true". The server is
// stopped when the test ends.
func StartServer(t testing.TB) *Server {
	t.Helper()
	return StartServerOn(t, 0)
}

// StartServerOn is StartServer on a given port (0: a free one), for a
// test that owns a port range on a shared machine.
func StartServerOn(t testing.TB, port int) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not found and CI=true: %v", err)
		}
		t.Skipf("redis-server not found in PATH: %v", err)
	}
	if port == 0 {
		port = freePort(t)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), port: port}
	s.Start()
	t.Cleanup(func() {
		if s.cmd != nil {
			s.Stop()
		}
	})
	return s
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Options are client options for the server, with short timeouts so that
// a stopped server is noticed quickly.
func (s *Server) Options() *redis.Options {
	return &redis.Options{
		Addr:         s.Addr(),
		DialTimeout:  500 * time.Millisecond,
		ReadTimeout:  time.Second,
		WriteTimeout: time.Second,
		MaxRetries:   -1,
		// One dial attempt per command: a stopped server fails fast.
		DialerRetries:      1,
		DialerRetryTimeout: 10 * time.Millisecond,
	}
}

// Start starts the server (again) and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin,
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--appendonly", "yes", "--appendfsync", "always",
		"--save", "", "--protected-mode", "no", "--loglevel", "warning",
		"--logfile", filepath.Join(s.dir, "redis.log"))
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	s.done = make(chan error, 1)
	go func(cmd *exec.Cmd, done chan<- error) { done <- cmd.Wait() }(s.cmd, s.done)
	c := redis.NewClient(s.Options())
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			s.t.Fatalf("redis-server on %s did not answer: %v\n%s", s.Addr(), err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Freeze stops the server with SIGSTOP: it keeps its connections and its
// port but answers nothing, as a hung host does, until Thaw.
func (s *Server) Freeze() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatalf("freeze redis-server: %v", err)
	}
}

// Thaw resumes a frozen server (SIGCONT).
func (s *Server) Thaw() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		s.t.Fatalf("thaw redis-server: %v", err)
	}
}

// Stop shuts the server down (SIGTERM: it flushes its append-only file
// first) and waits for it to exit.
func (s *Server) Stop() {
	s.t.Helper()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a frozen server could not stop
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
		s.t.Errorf("stop redis-server: %v", err)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
		s.t.Errorf("redis-server on %s did not stop within 10s; killed", s.Addr())
	}
	s.cmd = nil
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func randomHex() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return hex.EncodeToString(b[:])
}
