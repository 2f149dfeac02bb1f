package dedupe

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Feed leases with fencing tokens ([FeedLeaser]). A feed's lease is the
// string key "{p:N}f:F:lease" (owner, PX ttl) and its token the field
// "fence" of "{p:N}f:F:val", both in the feed's slot, so that taking the
// lease and growing the token is one script, and Diff and Commit check
// the token in their own script.

// Feed lease scripts: KEYS pairs (lease key, val key) of feeds of one
// partition; ARGV owner, ttl ms. They answer one value per feed.
const (
	acquireFeedLeasesSrc = `
local out = {}
for i = 1, #KEYS, 2 do
  local lk, vk = KEYS[i], KEYS[i+1]
  local tok = 0
  if redis.call("GET", lk) == ARGV[1] then
    redis.call("PEXPIRE", lk, ARGV[2])
    tok = tonumber(redis.call("HGET", vk, "fence") or "0")
    if tok == 0 then tok = redis.call("HINCRBY", vk, "fence", 1) end
  elseif redis.call("SET", lk, ARGV[1], "NX", "PX", ARGV[2]) then
    tok = redis.call("HINCRBY", vk, "fence", 1)
  end
  out[#out+1] = tok
end
return out
`
	renewFeedLeasesSrc = `
local out = {}
for i = 1, #KEYS, 2 do
  if redis.call("GET", KEYS[i]) == ARGV[1] then
    redis.call("PEXPIRE", KEYS[i], ARGV[2])
    out[#out+1] = 1
  else
    out[#out+1] = 0
  end
end
return out
`
	releaseFeedLeasesSrc = `
local out = {}
for i = 1, #KEYS, 2 do
  if redis.call("GET", KEYS[i]) == ARGV[1] then
    out[#out+1] = redis.call("DEL", KEYS[i])
  else
    out[#out+1] = 0
  end
end
return out
`
)

type feedLeaseScripts struct{ acquire, renew, release *redis.Script }

func newFeedLeaseScripts() feedLeaseScripts {
	return feedLeaseScripts{
		acquire: redis.NewScript(acquireFeedLeasesSrc),
		renew:   redis.NewScript(renewFeedLeasesSrc),
		release: redis.NewScript(releaseFeedLeasesSrc),
	}
}

// AcquireFeedLeases implements [FeedLeaser]: one script per partition (and
// per 500 feeds), all in one pipeline.
func (r *Redis) AcquireFeedLeases(ctx context.Context, feedIDs []string, owner string, ttl time.Duration) ([]int64, error) {
	if owner == "" || ttl < time.Millisecond {
		return nil, fmt.Errorf("acquire feed leases: %w: empty owner or ttl under 1ms", ErrInvalid)
	}
	return r.feedLeases(ctx, r.fl.acquire, "acquire", feedIDs, owner, ttl.Milliseconds())
}

// RenewFeedLeases implements [FeedLeaser] like AcquireFeedLeases.
func (r *Redis) RenewFeedLeases(ctx context.Context, feedIDs []string, owner string, ttl time.Duration) ([]bool, error) {
	if owner == "" || ttl < time.Millisecond {
		return nil, fmt.Errorf("renew feed leases: %w: empty owner or ttl under 1ms", ErrInvalid)
	}
	v, err := r.feedLeases(ctx, r.fl.renew, "renew", feedIDs, owner, ttl.Milliseconds())
	if err != nil {
		return nil, err
	}
	ok := make([]bool, len(v))
	for i, n := range v {
		ok[i] = n == 1
	}
	return ok, nil
}

// ReleaseFeedLeases implements [FeedLeaser] like AcquireFeedLeases.
func (r *Redis) ReleaseFeedLeases(ctx context.Context, feedIDs []string, owner string) error {
	if owner == "" {
		return fmt.Errorf("release feed leases: %w: empty owner", ErrInvalid)
	}
	_, err := r.feedLeases(ctx, r.fl.release, "release", feedIDs, owner, 0)
	return err
}

// feedLeases runs s over the feeds grouped by partition (a script's keys
// must share one slot) and answers in the feeds' order.
func (r *Redis) feedLeases(ctx context.Context, s *redis.Script, op string, feedIDs []string, owner string, ttlMS int64) ([]int64, error) {
	for _, id := range feedIDs {
		if err := checkFeedID(id); err != nil {
			return nil, err
		}
	}
	groups := r.groupByPartition(feedIDs, func(id string) string { return id })
	var calls []scriptCall
	var idx [][]int
	for _, g := range groups {
		keys := make([]string, 0, 2*len(g))
		for _, i := range g {
			keys = append(keys, r.feedKey(feedIDs[i], "lease"), r.feedKey(feedIDs[i], "val"))
		}
		calls = append(calls, scriptCall{keys: keys, args: []any{owner, ttlMS}})
		idx = append(idx, g)
	}
	out := make([]int64, len(feedIDs))
	if len(calls) == 0 {
		return out, nil
	}
	cmds, err := r.runPipelined(ctx, s, calls)
	if err != nil {
		return nil, fmt.Errorf("redis %s feed leases: %w", op, err)
	}
	for j, c := range cmds {
		v, err := c.Int64Slice()
		if err == nil && len(v) != len(idx[j]) {
			err = fmt.Errorf("%d answers for %d leases", len(v), len(idx[j]))
		}
		if err != nil {
			return nil, fmt.Errorf("redis %s feed leases: %w", op, err)
		}
		for k, i := range idx[j] {
			out[i] = v[k]
		}
	}
	return out, nil
}

// groupByPartition splits the indexes of names into groups of one
// partition each (partition of key(name)), at most leaseChunk per group.
func (r *Redis) groupByPartition(names []string, key func(string) string) [][]int {
	by := map[int][]int{}
	var order []int
	for i, n := range names {
		p := r.l.partitionOf(key(n))
		if _, ok := by[p]; !ok {
			order = append(order, p)
		}
		by[p] = append(by[p], i)
	}
	var out [][]int
	for _, p := range order {
		g := by[p]
		for start := 0; start < len(g); start += leaseChunk {
			out = append(out, g[start:min(start+leaseChunk, len(g))])
		}
	}
	return out
}

func fenceArg(v *Validators) string {
	if v == nil || v.Fence == 0 {
		return "0"
	}
	return strconv.FormatInt(v.Fence, 10)
}

// fenceErr turns the scripts' FENCED reply into [ErrFenced].
func fenceErr(err error) error {
	if redis.HasErrorPrefix(err, "FENCED") {
		return fmt.Errorf("%w: %s", ErrFenced, err.Error())
	}
	return err
}
