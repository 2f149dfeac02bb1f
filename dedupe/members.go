package dedupe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Membership tells running workers about each other, so that they can
// share the feeds out rather than leave them to whoever took their leases
// first.
type Membership interface {
	// Heartbeat marks owner (a member name: the worker's id and the
	// fingerprint of its feeds, see memberName) alive for ttl and returns
	// every member alive now (owner included), sorted.
	Heartbeat(ctx context.Context, owner string, ttl time.Duration) ([]string, error)
	// Leave removes owner at once (a clean stop), so that the others take
	// its feeds without waiting for its heartbeat to expire.
	Leave(ctx context.Context, owner string) error
}

var (
	_ Membership = (*Redis)(nil)
	_ Membership = (*Bolt)(nil)
)

// heartbeatSrc: KEYS P"members" (a sorted set owner -> alive until, on the
// server's clock). ARGV owner, ttl ms. Returns the owners alive now.
const heartbeatSrc = `
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call("ZADD", KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
redis.call("PEXPIRE", KEYS[1], ARGV[2])
return redis.call("ZRANGE", KEYS[1], 0, -1)
`

var heartbeatScript = redis.NewScript(heartbeatSrc)

// Heartbeat implements [Membership] with one script on P"members".
func (r *Redis) Heartbeat(ctx context.Context, owner string, ttl time.Duration) ([]string, error) {
	if owner == "" || ttl < time.Millisecond {
		return nil, fmt.Errorf("heartbeat: %w: empty owner or ttl under 1ms", ErrInvalid)
	}
	m, err := heartbeatScript.Run(ctx, r.c, []string{r.prefix + "members"}, owner, ttl.Milliseconds()).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("redis heartbeat: %w", err)
	}
	return m, nil
}

// Leave implements [Membership].
func (r *Redis) Leave(ctx context.Context, owner string) error {
	if err := r.c.ZRem(ctx, r.prefix+"members", owner).Err(); err != nil {
		return fmt.Errorf("redis leave: %w", err)
	}
	return nil
}

// Leave implements [Membership]: nothing to leave.
func (b *Bolt) Leave(context.Context, string) error { return nil }

// Heartbeat implements [Membership]: the embedded store has one process.
func (b *Bolt) Heartbeat(_ context.Context, owner string, _ time.Duration) ([]string, error) {
	return []string{owner}, nil
}

// memberName is how a worker names itself in P"members": its id and the
// fingerprint of the feeds it polls, "id|fingerprint" (the id alone when
// it told none). The fingerprint is in the name, so that it and the
// heartbeat are one atomic entry in one key (Cluster-legal, and nothing to
// clean up after a worker killed); the whole name is what rendezvous
// hashing weighs, so workers of a version that named themselves by id alone
// agree on every feed's preferred member.
func memberName(id, feeds string) string {
	if feeds == "" {
		return id
	}
	return id + "|" + feeds
}

// memberFeeds is the feeds fingerprint in a member name, "" when it has
// none (a worker that told none, or of an older version).
func memberFeeds(name string) string {
	if i := strings.LastIndexByte(name, '|'); i >= 0 {
		return name[i+1:]
	}
	return ""
}

// feedsFingerprint identifies a set of feed ids, whatever their order:
// the first 16 hex digits of SHA-256 over the sorted, distinct ids. Empty
// for no feeds.
func feedsFingerprint(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	s := slices.Clone(ids)
	slices.Sort(s)
	s = slices.Compact(s)
	h := sha256.New()
	for _, id := range s {
		_, _ = h.Write([]byte(id))
		_, _ = h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// preferred is the member a feed belongs to among members (rendezvous
// hashing): when a member joins or leaves, only the feeds it wins or held
// move.
func preferred(members []string, feedID string) string {
	var best string
	var top uint64
	for _, m := range members {
		h := fnv.New64a()
		_, _ = h.Write([]byte(m))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(feedID))
		if v := fmix64(h.Sum64()); best == "" || v > top {
			best, top = m, v
		}
	}
	return best
}

// fmix64 is MurmurHash3's finalizer: FNV alone barely separates inputs
// that differ in one byte, and one member would win every feed.
func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}
