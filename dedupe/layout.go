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
// hash tag, "{p:N}" (or "{p:N:k}", see newLayout) with N the feed's
// partition, so that every script
// touches keys of one Redis Cluster slot only.
type layout struct {
	prefix string
	parts  int
	tags   []string // "{p:N}" or "{p:N:k}" per partition, see newLayout
	// tagged is prefix and tag per partition, made once: every key starts
	// with one, and building it per key was an allocation per key.
	tagged []string
}

// clusterSlots is the number of Redis Cluster hash slots.
const clusterSlots = 16384

// newLayout picks each partition's hash tag so that partition N's slot
// lies in the N-th of parts equal ranges of the 16384 slots: Redis Cluster
// gives each master a contiguous range of slots, so the partitions spread
// over the masters as evenly as the slots do. The tag is "p:N" when that
// already lands in its range, else "p:N:k" with the smallest k that does.
// It depends only on parts, so every replica computes the same tags.
func newLayout(prefix string, parts int) layout {
	l := layout{prefix: prefix, parts: parts, tags: make([]string, parts), tagged: make([]string, parts)}
	for p := range parts {
		lo, hi := p*clusterSlots/parts, (p+1)*clusterSlots/parts
		base := "p:" + strconv.Itoa(p)
		tag := base
		for k := 0; ; k++ {
			if s := int(crc16(tag)) % clusterSlots; s >= lo && s < hi {
				break
			}
			tag = base + ":" + strconv.Itoa(k)
		}
		l.tags[p] = "{" + tag + "}"
		l.tagged[p] = prefix + l.tags[p]
	}
	return l
}

// crc16 is CRC-16/XMODEM, the hash Redis Cluster maps keys to slots with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
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
func (l layout) tag(p int) string { return l.tagged[p] }

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
