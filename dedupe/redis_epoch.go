package dedupe

import (
	"context"
	"fmt"
	"strconv"
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

// epochKey is the marker's key: one key, so that reading it is a
// single-key command on any topology.
func (r *Redis) epochKey() string { return r.prefix + "epoch" }

// Epoch implements [Reconciler.Epoch] in one script (GET, or SET when
// missing).
func (r *Redis) Epoch(ctx context.Context) (string, bool, error) {
	id, err := newEpochID()
	if err != nil {
		return "", false, err
	}
	res, err := redis.NewScript(epochSrc).Run(ctx, r.c, []string{r.epochKey()}, id).Slice()
	if err != nil {
		return "", false, fmt.Errorf("redis epoch marker: %w", err)
	}
	if len(res) != 2 {
		return "", false, fmt.Errorf("redis epoch marker: unexpected reply %v", res)
	}
	got, _ := res[0].(string)
	return got, res[1] == int64(1), nil
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
	n, err := redis.NewScript(recordFoundSrc).Run(ctx, r.c, keys, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("redis record found items of feed %q: %w", feedID, err)
	}
	return n, nil
}
