package dedupe

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// DefaultPartitions is how many shards the outbox, the dead letters and the
// claims are split into when [RedisOptions.Partitions] is zero.
const DefaultPartitions = 16

// MaxPartitions bounds [RedisOptions.Partitions]: one claim call may visit
// every partition, and a cluster has 16384 slots.
const MaxPartitions = 4096

// layout names the Redis keys. Every key of one feed, the outbox, dead
// letters and claims of that feed's items, and the feed's lease share one
// hash tag, "{p:N}" with N the feed's partition, so that every script
// touches keys of one Redis Cluster slot only.
type layout struct {
	prefix string
	parts  int
}

// partitionOf is the stable partition of a feed: FNV-1a of its id modulo
// the number of partitions. It must never change for a given id and
// partition count: the keys of a feed are found through it.
func (l layout) partitionOf(feedID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(feedID))
	return int(h.Sum32() % uint32(l.parts))
}

// tag is the start of every key of partition p: the prefix and the hash
// tag that puts them in one slot.
func (l layout) tag(p int) string { return l.prefix + "{p:" + strconv.Itoa(p) + "}" }

func (l layout) feedTag(feedID string) string { return l.tag(l.partitionOf(feedID)) }

func (l layout) feedKey(feedID, suffix string) string {
	return l.feedTag(feedID) + "f:" + feedID + ":" + suffix
}

func (l layout) qKey(p int, suffix string) string { return l.tag(p) + "q:" + suffix }

// leaseKey is a named lease that is not a feed's ("category:<name>"): it
// lives in the partition its name hashes to.
func (l layout) leaseKey(name string) string { return l.tag(l.partitionOf(name)) + "lease:" + name }

// checkPrefix refuses a prefix with braces: Redis Cluster would hash the
// first "{...}" of the prefix instead of the partition's tag, and every key
// would land in one slot.
func checkPrefix(prefix string) error {
	if strings.ContainsAny(prefix, "{}") {
		return fmt.Errorf("key prefix %q: %w: must not contain \"{\" or \"}\" (the store adds its own hash tags)", prefix, ErrInvalid)
	}
	return nil
}
