package bench

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe/dedupetest"
)

func TestKeyKind(t *testing.T) {
	for key, want := range map[string]string{
		"{p:3}f:farm-7:seen":     "{p}f:*:seen",
		"{p:3:12}f:a:b:val":      "{p}f:*:val",
		"{p:3}f:farm-7:a:ab12cd": "{p}f:*:a:*",
		"{p:0}q:due":             "{p}q:due",
		"{p:9}x:ffee":            "{p}x:*",
		"{p:9}lease:feed:farm-1": "{p}lease:*",
		"hb:host-1":              "hb:*",
		"members":                "members",
		"note:farm-1:etag":       "note:*:etag",
		"hist:{f:farm-1}:polls":  "hist:*:polls",
		"hist:{h}:1700000000":    "hist:{h}:*",
	} {
		if got := keyKind(key); got != want {
			t.Errorf("keyKind(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestRedisStats runs a small bench with RedisStats on a private Redis (its
// counters are server-wide) and checks what a capacity estimate reads from
// it: commands per poll of the 304 pass, the keys of every feed by kind,
// and the memory they take.
func TestRedisStats(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end bench: skipped with -short")
	}
	srv := dedupetest.StartServer(t)
	const feeds = 20
	rep, err := Run(t.Context(), Options{
		Feeds: feeds, Items: 3, Change: 0.1, Runs: 1, Stores: []string{StoreRedis}, RedisStats: true,
		RedisURL: "redis://" + srv.Addr() + "/0",
		Command:  []string{os.Args[0]},
		Env:      []string{childEnv + "=1", "GORACE=atexit_sleep_ms=0"},
		Timeout:  2 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	c1, c2 := rep.Stores[0].Median[0], rep.Stores[0].Median[1]
	if c1.Redis == nil || c2.Redis == nil {
		t.Fatalf("no Redis stats in cycles 1 and 2: %+v, %+v", c1.Redis, c2.Redis)
	}
	if c2.Redis.Commands <= 0 || c2.Redis.CommandsPerPoll <= 0 || c2.Redis.Scripts <= 0 {
		t.Errorf("cycle 2 (all 304): %d commands, %v per poll, %d scripts; want all counted", c2.Redis.Commands, c2.Redis.CommandsPerPoll, c2.Redis.Scripts)
	}
	if c1.Redis.ServerCPU <= 0 {
		t.Errorf("cycle 1: Redis server CPU %v s; want the time its commands took", c1.Redis.ServerCPU)
	}
	if c1.Redis.CommandsPerItem <= 0 || c1.Redis.UsedMemory <= 0 || c1.Redis.KeyBytes <= 0 {
		t.Errorf("cycle 1: %v commands per item, used_memory +%d, keys %d B; want all measured", c1.Redis.CommandsPerItem, c1.Redis.UsedMemory, c1.Redis.KeyBytes)
	}
	kinds := map[string]KeyKind{}
	for _, k := range c1.Redis.Keys {
		kinds[k.Kind] = k
	}
	for _, kind := range []string{"{p}f:*:rec", "{p}f:*:seen", "{p}f:*:val"} {
		if k := kinds[kind]; k.Keys != feeds || k.Bytes <= 0 {
			t.Errorf("keys %s: %+v; want one per feed (%d) with their bytes", kind, k, feeds)
		}
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "{p}f:*:rec") {
		t.Errorf("the text report does not list the keys by kind:\n%s", text.String())
	}
}
