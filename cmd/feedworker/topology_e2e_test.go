package main

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/sandbox"
)

// runReplicas starts n workers on e's config, waits for want items on the
// API and a few more poll rounds, stops them, and returns how many polls
// each made.
func (e *e2e) runReplicas(t *testing.T, n, want int) []float64 {
	t.Helper()
	var cmds []*exec.Cmd
	var admins []string
	for i := 0; i < n; i++ {
		addr := freeAddr(t)
		admins = append(admins, addr)
		name := fmt.Sprintf("replica-%d", i)
		cmds = append(cmds, e.start(name, "run", "--config", e.config(name, addr)))
	}
	waitFor(t, 90*time.Second, fmt.Sprintf("%d items on the API", want), func() bool {
		return len(e.sb.AllContent()) >= want
	})
	time.Sleep(1500 * time.Millisecond) // several more poll rounds by every replica
	polls := make([]float64, n)
	for i, addr := range admins {
		polls[i] = scrapeCounter(t, "http://"+addr+"/metrics", "feedworker_polls_total")
	}
	for i, cmd := range cmds {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("replica %d after SIGTERM: %v", i, err)
		}
	}
	return polls
}

// TestClusterThreeReplicas is TestThreeReplicas on a Redis Cluster: every
// item once although a third of the writes are answered 500, one replica
// at a time per feed, the polls spread over the three, and the store's
// keys and commands spread over the cluster's masters.
func TestClusterThreeReplicas(t *testing.T) {
	addrs := dedupetest.ClusterAddrs(t)
	const feeds, per = 24, 5
	e := newE2E(t, feedfarm.Options{Feeds: feeds, Items: per, Seed: 11, Latency: 20 * time.Millisecond}, sandbox.Faults{CommitThenFail: 0.3, Seed: 13})
	e.redisYAML = fmt.Sprintf("  mode: cluster\n  addrs: [%s]\n", strings.Join(addrs, ", "))
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() {
		_ = dedupetest.DeletePrefix(context.Background(), cc, e.prefix)
		cc.Close()
	})
	before := nodeCommands(t, cc)
	polls := e.runReplicas(t, 3, feeds*per)
	after := nodeCommands(t, cc)

	e.assertExactlyOnce(feeds * per)
	failed := 0
	for _, r := range e.sb.Requests() {
		if r.Fault == "commit_then_fail" {
			failed++
		}
	}
	if failed == 0 {
		t.Error("no write was answered 500 after being applied; the fault did not fire")
	}
	if got := e.farm.MaxConcurrentPolls(); got != 1 {
		t.Errorf("a feed was polled by %d workers at once, want 1", got)
	}
	t.Logf("polls per replica: %v; %d writes applied and answered 500, each recovered", polls, failed)
	for i, n := range polls {
		if n == 0 {
			t.Errorf("replica %d polled nothing; the work did not spread over the three", i)
		}
	}
	load := partitionLoad(t, cc, e.prefix, feeds)
	t.Logf("per-partition key load (partition: node, feeds, keys):\n%s", load)
	busy := 0
	for node, n := range after {
		d := n - before[node]
		t.Logf("node %s: %d commands during the run", node, d)
		if d > 0 {
			busy++
		}
	}
	if busy < len(after) {
		t.Errorf("only %d of %d cluster masters served commands", busy, len(after))
	}
}

// nodeCommands reads total_commands_processed of every master.
func nodeCommands(t *testing.T, cc *redis.ClusterClient) map[string]int64 {
	t.Helper()
	var mu sync.Mutex
	out := map[string]int64{}
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "stats").Result()
		if err != nil {
			return err
		}
		m := regexp.MustCompile(`total_commands_processed:(\d+)`).FindStringSubmatch(info)
		if m == nil {
			return fmt.Errorf("no total_commands_processed in INFO of %s", c.Options().Addr)
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		mu.Lock()
		out[c.Options().Addr] = n
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatalf("cluster INFO: %v", err)
	}
	return out
}

// partitionLoad tabulates, per partition, the master serving it, the
// farm's feeds in it and the keys it holds under prefix.
func partitionLoad(t *testing.T, cc *redis.ClusterClient, prefix string, feeds int) string {
	t.Helper()
	ctx := context.Background()
	st := dedupe.NewRedis(cc, dedupe.RedisOptions{Prefix: prefix})
	perFeeds := map[int]int{}
	for i := 0; i < feeds; i++ {
		perFeeds[st.PartitionOf(fmt.Sprintf("farm-%d", i))]++
	}
	tags := make(map[string]int, dedupe.DefaultPartitions)
	for p := 0; p < dedupe.DefaultPartitions; p++ {
		tags[st.PartitionTag(p)] = p
	}
	var mu sync.Mutex
	perKeys := map[int]int{}
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			if i := strings.IndexByte(k, '}'); i > 0 {
				if p, ok := tags[k[:i+1]]; ok {
					mu.Lock()
					perKeys[p]++
					mu.Unlock()
				}
			}
		}
		return iter.Err()
	})
	if err != nil {
		t.Fatalf("scan cluster: %v", err)
	}
	var rows []string
	for p := 0; p < dedupe.DefaultPartitions; p++ {
		node := "?"
		if c, err := cc.MasterForKey(ctx, st.PartitionTag(p)+"x"); err == nil {
			node = c.Options().Addr
		}
		rows = append(rows, fmt.Sprintf("  p%02d %-18s %s feeds %d keys %d", p, st.PartitionTag(p)[len(prefix):], node, perFeeds[p], perKeys[p]))
	}
	sort.Strings(rows)
	return strings.Join(rows, "\n")
}

// TestSentinelFailover runs two workers through Sentinel and forces a
// failover (SENTINEL FAILOVER) while they publish: the workers follow the
// new master by themselves, nothing is lost and nothing is posted twice.
func TestSentinelFailover(t *testing.T) {
	sentinels, master := dedupetest.SentinelAddrs(t)
	const feeds, per = 6, 30
	e := newE2E(t, feedfarm.Options{Feeds: feeds, Items: per, Seed: 17}, sandbox.Faults{Latency: 25 * time.Millisecond, CommitThenFail: 0.1, Seed: 19})
	e.workers = 2
	e.redisYAML = fmt.Sprintf("  mode: sentinel\n  addrs: [%s]\n  master_name: %s\n  wait_replicas: 1\n", strings.Join(sentinels, ", "), master)
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: master, SentinelAddrs: sentinels})
	t.Cleanup(func() {
		_ = dedupetest.DeletePrefix(context.Background(), fc, e.prefix)
		fc.Close()
	})
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinels[0]})
	t.Cleanup(func() { sc.Close() })
	ctx := context.Background()
	before, err := sc.GetMasterAddrByName(ctx, master).Result()
	if err != nil {
		t.Fatalf("sentinel: master %s: %v", master, err)
	}
	want := feeds * per
	var cmds []*exec.Cmd
	for i := 0; i < 2; i++ {
		name := fmt.Sprintf("sentinel-%d", i)
		cmds = append(cmds, e.start(name, "run", "--config", e.config(name, "")))
	}
	waitFor(t, 60*time.Second, "publishing to start", func() bool { return len(e.sb.AllContent()) > 20 })
	if err := sc.Failover(ctx, master).Err(); err != nil {
		t.Fatalf("SENTINEL FAILOVER: %v", err)
	}
	at := len(e.sb.AllContent())
	waitFor(t, 60*time.Second, "the sentinels to name a new master", func() bool {
		now, err := sc.GetMasterAddrByName(ctx, master).Result()
		return err == nil && strings.Join(now, ":") != strings.Join(before, ":")
	})
	after, _ := sc.GetMasterAddrByName(ctx, master).Result()
	t.Logf("failover from %s to %s with %d of %d items published", strings.Join(before, ":"), strings.Join(after, ":"), at, want)
	waitFor(t, 90*time.Second, fmt.Sprintf("%d items after the failover", want), func() bool {
		return len(e.sb.AllContent()) >= want
	})
	time.Sleep(time.Second) // anything still in flight would show as a duplicate
	for i, cmd := range cmds {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("worker %d after SIGTERM: %v", i, err)
		}
	}
	e.assertExactlyOnce(want)
	if at >= want {
		t.Error("everything was published before the failover; the test proved nothing")
	}
}
