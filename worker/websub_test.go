package worker

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedworker/feedworker/feeds"
	"github.com/feedworker/feedworker/internal/websubhub"
	"github.com/feedworker/feedworker/sandbox"
)

// atomWithHub is an Atom feed naming hub, with entries titled as given.
func atomWithHub(hub, self string, titles ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Pushed news</title><id>urn:pushed</id>
<link rel="hub" href="%s"/><link rel="self" href="%s"/><updated>2026-03-02T12:00:00Z</updated>
`, hub, self)
	for i, t := range titles {
		fmt.Fprintf(&b, `<entry><title>%s</title><id>urn:pushed:%s</id><link href="https://news.example.org/%d"/>
<updated>2026-03-02T1%d:00:00Z</updated><content type="html">&lt;p&gt;%s&lt;/p&gt;</content></entry>
`, t, strings.ReplaceAll(strings.ToLower(t), " ", "-"), i, i, t)
	}
	b.WriteString("</feed>\n")
	return b.String()
}

// freePort returns a loopback address nobody listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestWebSubEndToEnd: a running worker subscribes to the hub a feed names,
// answers its verification, publishes what the hub pushes (once, however
// often it is pushed), and drops a push with a forged signature.
func TestWebSubEndToEnd(t *testing.T) {
	sb, err := sandbox.New(sandbox.Options{ClientSecret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	ss := httptest.NewServer(sb)
	t.Cleanup(ss.Close)
	hub := websubhub.New(t)

	var mu sync.Mutex
	feedDoc := ""
	fs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/atom+xml")
		_, _ = w.Write([]byte(feedDoc))
	}))
	t.Cleanup(fs.Close)
	self := fs.URL + "/news.atom"
	feedDoc = atomWithHub(hub.URL, self, "First story")

	dir := t.TempDir()
	listen := freePort(t)
	public := "http://" + listen + "/websub"
	src := fmt.Sprintf(`api:
  base_url: %s
  token_url: %s/oauth/token
  client_id: sandbox
  client_secret: %s
store:
  path: %s
admin:
  listen: ""
websub:
  public_url: %s
  listen: %s
  fallback_interval: 6h
feeds:
  - id: pushed
    url: %s
    interval: 1h
`, ss.URL, ss.URL, testSecret, filepath.Join(dir, "store.db"), public, listen, self)
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path, "test")
	if err != nil {
		t.Fatal(err)
	}
	w := newWorker(t, cfg, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	titles := func() map[string]int {
		out := map[string]int{}
		for _, it := range sb.AllContent() {
			out[it.Title]++
		}
		return out
	}
	cb := public + "/pushed"
	websubhub.WaitFor(t, "the first poll's story", func() bool { return titles()["First story"] == 1 })
	websubhub.WaitFor(t, "the hub's verification", func() bool { return hub.Sub(cb).Verified == 1 })
	if reqs := hub.Requests("subscribe"); len(reqs) != 1 || reqs[0].Topic != self {
		t.Fatalf("subscribe requests %+v, want one for the feed's self URL", reqs)
	}
	secret := hub.Sub(cb).Secret

	// With a live subscription, a poll asks the schedule for the fallback
	// interval rather than the feed's own.
	res, err := feeds.ParseDocument([]byte(atomWithHub(hub.URL, self, "First story")), "application/atom+xml")
	if err != nil {
		t.Fatal(err)
	}
	res.Hub, res.Topic = hub.URL, self
	if err := w.Handle(t.Context(), cfg.Feeds[0], res); err != nil {
		t.Fatal(err)
	}
	if res.MinInterval != 6*time.Hour {
		t.Errorf("poll of a subscribed feed: MinInterval %v, want websub.fallback_interval 6h", res.MinInterval)
	}

	// A new item, pushed: published without a poll (the feed's interval is
	// an hour). The time it took is reported, not asserted.
	start := time.Now()
	doc := atomWithHub(hub.URL, self, "Second story", "First story")
	if code := hub.Push(cb, secret, doc); code != http.StatusNoContent {
		t.Fatalf("push answered %d, want 204", code)
	}
	websubhub.WaitFor(t, "the pushed story", func() bool { return titles()["Second story"] == 1 })
	t.Logf("pushed item on the API %v after the push", time.Since(start).Round(time.Millisecond))

	// Forged: acknowledged and dropped. A signed push after it is
	// published, and by then the forged one would have been too.
	if code := hub.Push(cb, "forged-secret", atomWithHub(hub.URL, self, "Forged story")); code != http.StatusAccepted {
		t.Errorf("forged push answered %d, want 202", code)
	}
	if code := hub.Push(cb, "", atomWithHub(hub.URL, self, "Unsigned story")); code != http.StatusAccepted {
		t.Errorf("unsigned push answered %d, want 202", code)
	}
	if code := hub.Push(cb, secret, atomWithHub(hub.URL, self, "Third story")); code != http.StatusNoContent {
		t.Fatalf("push answered %d, want 204", code)
	}
	websubhub.WaitFor(t, "the third story", func() bool { return titles()["Third story"] == 1 })
	// The same content pushed again is not posted again.
	if code := hub.Push(cb, secret, doc); code != http.StatusNoContent {
		t.Fatalf("repeated push answered %d, want 204", code)
	}
	if err := w.pub.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := titles()
	if got["Forged story"] != 0 || got["Unsigned story"] != 0 {
		t.Errorf("forged or unsigned content was published: %v", got)
	}
	if got["First story"] != 1 || got["Second story"] != 1 || got["Third story"] != 1 || len(got) != 3 {
		t.Errorf("content on the API %v, want each of the three stories once", got)
	}
}
