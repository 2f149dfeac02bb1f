package dedupetest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis Cluster and the Sentinel set are started by
// scripts/redis-topologies.sh (scripts/test.sh does it), which exports:
//
//	REDIS_CLUSTER_ADDRS    seed nodes of a Redis Cluster, comma-separated
//	REDIS_SENTINEL_ADDRS   the sentinels, comma-separated
//	REDIS_SENTINEL_MASTER  the master name they watch
//
// Without them a test is skipped, unless CI is "true": there it fails.

// ClusterAddrs returns the cluster's seed nodes, or skips (fails under CI)
// the test when REDIS_CLUSTER_ADDRS is unset.
func ClusterAddrs(t testing.TB) []string {
	t.Helper()
	return addrsFromEnv(t, "REDIS_CLUSTER_ADDRS", "a Redis Cluster")
}

// SentinelAddrs returns the sentinels and the master name, or skips (fails
// under CI) the test when the environment does not name them.
func SentinelAddrs(t testing.TB) ([]string, string) {
	t.Helper()
	addrs := addrsFromEnv(t, "REDIS_SENTINEL_ADDRS", "a Sentinel set")
	master := os.Getenv("REDIS_SENTINEL_MASTER")
	if master == "" {
		missing(t, "REDIS_SENTINEL_MASTER", "a Sentinel set")
	}
	return addrs, master
}

func addrsFromEnv(t testing.TB, env, what string) []string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		missing(t, env, what)
	}
	return strings.Split(v, ",")
}

func missing(t testing.TB, env, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s unset and CI=true: scripts/test.sh starts %s (scripts/redis-topologies.sh)", env, what)
	}
	t.Skipf("%s unset: run scripts/redis-topologies.sh (or make test) to test against %s", env, what)
}

// Cluster returns a client of the Redis Cluster at REDIS_CLUSTER_ADDRS and
// a key prefix unique to the test, cleaned up as [Redis] does.
func Cluster(t testing.TB) (*redis.ClusterClient, string) {
	t.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: ClusterAddrs(t)})
	return c, ready(t, c, "cluster")
}

// Sentinel returns a failover client of the Sentinel set at
// REDIS_SENTINEL_ADDRS and a key prefix unique to the test.
func Sentinel(t testing.TB) (*redis.Client, string) {
	t.Helper()
	addrs, master := SentinelAddrs(t)
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: master, SentinelAddrs: addrs})
	return c, ready(t, c, "sentinel")
}

// ready pings c (failing the test if it does not answer: the environment
// said it would) and returns a fresh prefix, deleted at the end.
func ready(t testing.TB, c redis.UniversalClient, what string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		t.Fatalf("%s named by the environment does not answer: %v", what, err)
	}
	prefix := "fwtest:" + randomHex() + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := DeletePrefix(ctx, c, prefix); err != nil {
			t.Errorf("clean up keys %s*: %v", prefix, err)
		}
		c.Close()
	})
	return prefix
}
