package dedupe

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// epochSrc: KEYS the marker. ARGV a new id. Returns {id, created}.
const epochSrc = `
local v = redis.call("GET", KEYS[1])
if v then return {v, 0} end
redis.call("SET", KEYS[1], ARGV[1])
return {ARGV[1], 1}
`

// recordFoundSrc: KEYS seen, rec. ARGV now, n, then n tuples (external id,
// hash, content id, type). Returns how many records it changed.
const recordFoundSrc = luaLib + `
local now, n = ARGV[1], tonumber(ARGV[2])
local changed = 0
for i = 0, n - 1 do
  local b = 3 + 4*i
  local ext, hash, cid, ty = ARGV[b], ARGV[b+1], ARGV[b+2], ARGV[b+3]
  local s = redis.call("HGET", KEYS[2], ext)
  local r
  if not s then
    r = {h=hash, ph=hash, c=cid, ty=ty, fs=now, lp=now, pd="", st=""}
  else
    r = dec(s)
    if r.c == "" then
      -- What is queued (its hash is r.h) goes out as an update of the
      -- content found; the version the service has is unknown.
      r.c = cid; r.ty = ty; r.ph = ""; r.pd = ""; r.st = ""
    else
      r = nil
    end
  end
  if r then
    redis.call("HSET", KEYS[2], ext, enc(r))
    redis.call("ZADD", KEYS[1], now, ext)
    changed = changed + 1
  end
end
return changed
`

// epochKeys are the marker's keys, one per partition: each is read by a
// single-key script, so they live on the nodes that hold their partitions.
// The store's epoch is all of them together: losing any one (a Cluster
// node wiped, or a partition's keys deleted) changes it.
func (r *Redis) epochKeys() []string {
	keys := make([]string, r.l.parts)
	for p := range keys {
		keys[p] = r.l.tag(p) + "epoch"
	}
	return keys
}

// Epoch implements [Reconciler.Epoch]: one GET per marker key, in one
// pipeline; a key found missing is then written by a script (GET, or SET
// when still missing), in a second round trip. Every feed new to a worker
// reads the marker, and the markers are nearly always there: the GETs
// cost the worker a fraction of the scripts, and no random ids are drawn
// for markers that exist.
func (r *Redis) Epoch(ctx context.Context) (string, bool, error) {
	keys := r.epochKeys()
	ids := make([]string, len(keys))
	gets := make([]*redis.StringCmd, len(keys))
	if _, err := r.c.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, k := range keys {
			gets[i] = pl.Get(ctx, k)
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return "", false, fmt.Errorf("redis epoch marker: %w", err)
	}
	var calls []scriptCall
	var missing []int
	for i, g := range gets {
		v, err := g.Result()
		switch {
		case errors.Is(err, redis.Nil):
			id, err := newEpochID()
			if err != nil {
				return "", false, err
			}
			calls = append(calls, scriptCall{keys: []string{keys[i]}, args: []any{id}})
			missing = append(missing, i)
		case err != nil:
			return "", false, fmt.Errorf("redis epoch marker %s: %w", keys[i], err)
		default:
			ids[i] = v
		}
	}
	created := false
	if len(calls) > 0 {
		cmds, err := r.runPipelined(ctx, r.s.epoch, calls)
		if err != nil {
			return "", false, fmt.Errorf("redis epoch marker: %w", err)
		}
		for j, c := range cmds {
			i := missing[j]
			res, err := c.Slice()
			if err == nil && len(res) != 2 {
				err = fmt.Errorf("unexpected reply %v", res)
			}
			if err != nil {
				return "", false, fmt.Errorf("redis epoch marker %s: %w", keys[i], err)
			}
			ids[i], _ = res[0].(string)
			created = created || res[1] == int64(1)
		}
	}
	return strings.Join(ids, ","), created, nil
}

// RecordFound implements [Reconciler.RecordFound] in one script.
func (r *Redis) RecordFound(ctx context.Context, feedID string, found []Found, now time.Time) (int, error) {
	if err := checkFound(feedID, found); err != nil {
		return 0, err
	}
	if len(found) == 0 {
		return 0, nil
	}
	args := make([]any, 0, 2+4*len(found))
	args = append(args, ms(now), len(found))
	for _, f := range found {
		args = append(args, f.ExternalID, f.Hash, strconv.FormatInt(f.ContentID, 10), f.Type)
	}
	keys := []string{r.feedKey(feedID, "seen"), r.feedKey(feedID, "rec")}
	n, err := r.s.recordFound.Run(ctx, r.c, keys, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("redis record found items of feed %q: %w", feedID, err)
	}
	return n, nil
}
