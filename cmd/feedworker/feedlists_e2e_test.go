package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/sandbox"
)

// feedEntry is one feed of a config written by e2e.config.
var feedEntry = regexp.MustCompile(`(?m)^  - id: farm-(\d+)\n    url: .*\n`)

// keepFeeds rewrites the config at path to keep only the feeds keep says.
func keepFeeds(t *testing.T, path string, keep func(i int) bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := feedEntry.ReplaceAllFunc(b, func(m []byte) []byte {
		var i int
		if _, err := fmt.Sscanf(string(feedEntry.FindSubmatch(m)[1]), "%d", &i); err != nil {
			t.Fatal(err)
		}
		if keep(i) {
			return m
		}
		return nil
	})
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReplicasWithDifferentFeedLists runs two replicas whose feed lists
// overlap by a third: each feed that only one of them has must still be
// polled (rendezvous hashing may prefer the other replica for it), so every
// item, including those added once both replicas run, reaches the API once.
func TestReplicasWithDifferentFeedLists(t *testing.T) {
	const feeds, per = 18, 3
	e := newE2E(t, feedfarm.Options{Feeds: feeds, Items: per, Seed: 21}, sandbox.Faults{})
	lists := []func(int) bool{
		func(i int) bool { return i%3 != 2 }, // feeds 0 and 1 mod 3
		func(i int) bool { return i%3 != 0 }, // feeds 1 and 2 mod 3
	}
	var admins []string
	for r, keep := range lists {
		addr := freeAddr(t)
		admins = append(admins, addr)
		name := fmt.Sprintf("replica-%d", r)
		cfg := e.config(name, addr)
		keepFeeds(t, cfg, keep)
		cmd := e.start(name, "run", "--config", cfg)
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		})
	}
	waitFor(t, 90*time.Second, fmt.Sprintf("%d items on the API", feeds*per), func() bool {
		return len(e.sb.AllContent()) >= feeds*per
	})
	// A replica's first polls may come before it learns of the other (then
	// it polls all its feeds); what must hold once they know of each other
	// is that news on every feed is still picked up. Heartbeats come every
	// third of lease_ttl (1s).
	waitFor(t, 30*time.Second, "both replicas in "+e.prefix+"members", func() bool {
		return e.redis.ZCard(context.Background(), e.prefix+"members").Val() == 2
	})
	time.Sleep(time.Second) // three heartbeats: each replica's view has both

	added, _ := e.farm.Change(1, 7) // one new and one edited item on every feed
	want := feeds*per + added
	waitFor(t, 90*time.Second, fmt.Sprintf("%d items on the API after every feed gained one", want), func() bool {
		return len(e.sb.AllContent()) >= want
	})
	e.assertExactlyOnce(want)
	if got := e.farm.MaxConcurrentPolls(); got != 1 {
		t.Errorf("a feed was polled by %d replicas at once, want 1", got)
	}
	for r, addr := range admins {
		t.Logf("replica %d: %v polls", r, scrapeCounter(t, "http://"+addr+"/metrics", "feedworker_polls_total"))
	}
}
