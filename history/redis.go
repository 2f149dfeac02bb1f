package history

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keeps the history in Redis. Per feed, under the hash tag {f:ID}
// so one script may touch them all on Redis Cluster:
//
//	PREFIXhist:{f:ID}:items  hash   external id → item record (JSON)
//	PREFIXhist:{f:ID}:order  zset   external id, scored by last activity (ms)
//	PREFIXhist:{f:ID}:polls  list   poll records (JSON), newest first
//
// and for the whole worker PREFIXhist:{h}:HOURMS, a hash of the hour's
// counts (published, updated, failed, outbox) that expires after 48 hours.
// A feed's keys expire Limits.TTL after its last write, so the history of
// a feed removed from the config goes by itself.
type Redis struct {
	c      redis.Cmdable
	prefix string
	lim    Limits
}

var _ Store = (*Redis)(nil)

// NewRedis returns the Redis history store; prefix is the worker's key
// prefix (redis.prefix).
func NewRedis(c redis.Cmdable, prefix string, lim Limits) *Redis {
	return &Redis{c: c, prefix: prefix, lim: lim.withDefaults()}
}

// Keys names the keys of a feed's history (items, order, polls), for
// tests and for measuring their memory.
func (r *Redis) Keys(feedID string) []string {
	base := r.prefix + "hist:{f:" + feedID + "}:"
	return []string{base + "items", base + "order", base + "polls"}
}

func (r *Redis) hourKey(start int64) string {
	return r.prefix + "hist:{h}:" + strconv.FormatInt(start, 10)
}

// writeScript merges item updates into their records, pushes polls and
// trims both to their bounds, for one feed. It keeps to the same rules as
// record.merge and merge (bolt.go, history.go).
//
// KEYS: items, order, polls. ARGV: max items, max events, max polls, time
// to live (ms), number of polls P, P poll records, then one Update (JSON)
// per item.
var writeScript = redis.NewScript(`
local maxItems, maxEv, maxPolls, ttl, np = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
for i = 1, np do redis.call('LPUSH', KEYS[3], ARGV[5 + i]) end
if np > 0 then redis.call('LTRIM', KEYS[3], 0, maxPolls - 1) end
for i = 6 + np, #ARGV do
  local u = cjson.decode(ARGV[i])
  local e = u.e
  local cur = redis.call('HGET', KEYS[1], u.id)
  local rec
  if cur then rec = cjson.decode(cur) else rec = {id = u.id, f0 = e.t, ev = {}} end
  if u.ti then rec.ti = u.ti end
  if u.l then rec.l = u.l end
  if u.g then rec.g = u.g end
  if u.seen and e.t > (rec.f1 or 0) then rec.f1 = e.t end
  if u.dg then
    if rec.dg and e.k == 'changed' then
      local f = {}
      for k, v in pairs(u.dg) do if rec.dg[k] ~= v then f[#f + 1] = k end end
      for k in pairs(rec.dg) do if u.dg[k] == nil then f[#f + 1] = k end end
      table.sort(f)
      if #f > 0 then e.f = f else e.f = nil end
    end
    rec.dg = u.dg
  end
  local last = rec.ev[#rec.ev]
  if last and last.k == e.k and last.d == e.d and last.id == e.id and last.s == e.s and last.a == e.a
     and e.f == nil and last.f == nil then
    last.n = (last.n or 1) + 1
    last.t = e.t
    last.nx = e.nx
  else
    rec.ev[#rec.ev + 1] = e
    while #rec.ev > maxEv do table.remove(rec.ev, 1) end
  end
  local act = math.max(rec.f0, rec.f1 or 0, rec.ev[#rec.ev].t)
  redis.call('HSET', KEYS[1], u.id, cjson.encode(rec))
  redis.call('ZADD', KEYS[2], act, u.id)
end
local n = redis.call('ZCARD', KEYS[2])
if n > maxItems then
  local old = redis.call('ZRANGE', KEYS[2], 0, n - maxItems - 1)
  for i = 1, #old, 500 do
    redis.call('HDEL', KEYS[1], unpack(old, i, math.min(i + 499, #old)))
  end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, n - maxItems - 1)
end
for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, ttl) end
return n
`)

// Write runs one script per feed and the hour counts in one pipeline.
func (r *Redis) Write(ctx context.Context, batches []Batch, hours map[int64]Hour, outbox int, now time.Time) error {
	missing, err := r.write(ctx, batches, hours, outbox, now, false)
	if err == nil && len(missing) > 0 {
		// A Redis restarted or flushed its script cache: the scripts of
		// those feeds did not run, and are sent in full this once. Only
		// they: what else the pipeline held ran, and the hours' counts
		// added again were counted twice.
		_, err = r.write(ctx, missing, nil, -1, now, true)
	}
	if err != nil {
		return fmt.Errorf("history: write: %w", err)
	}
	return nil
}

// write sends batches' scripts (by digest unless full), the hours' counts
// and the outbox's size in one pipeline. It returns the batches whose
// script Redis did not have, when all else went through.
func (r *Redis) write(ctx context.Context, batches []Batch, hours map[int64]Hour, outbox int, now time.Time, full bool) ([]Batch, error) {
	pipe := r.c.Pipeline()
	scripts := make([]*redis.Cmd, len(batches))
	for i, b := range batches {
		args := make([]any, 0, 5+len(b.Polls)+len(b.Items))
		args = append(args, r.lim.Items, r.lim.Events, r.lim.Polls, r.lim.TTL.Milliseconds(), len(b.Polls))
		for _, p := range b.Polls {
			data, err := json.Marshal(p)
			if err != nil {
				return nil, err
			}
			args = append(args, data)
		}
		// The updates' JSON in one buffer per feed, not one each.
		size := 0
		for i := range b.Items {
			size += updateJSONSize(&b.Items[i])
		}
		buf := make([]byte, 0, size)
		for i := range b.Items {
			start := len(buf)
			buf = appendUpdateJSON(buf, &b.Items[i])
			args = append(args, buf[start:len(buf):len(buf)])
		}
		if full {
			scripts[i] = writeScript.Eval(ctx, pipe, r.Keys(b.Feed), args...)
		} else {
			scripts[i] = writeScript.EvalSha(ctx, pipe, r.Keys(b.Feed), args...)
		}
	}
	touch := func(start int64) {
		pipe.Expire(ctx, r.hourKey(start), hoursKept)
	}
	for start, h := range hours {
		key := r.hourKey(start)
		for field, n := range map[string]int{"published": h.Published, "updated": h.Updated, "failed": h.Failed} {
			if n != 0 {
				pipe.HIncrBy(ctx, key, field, int64(n))
			}
		}
		touch(start)
	}
	if outbox >= 0 {
		start := hourOf(now)
		pipe.HSet(ctx, r.hourKey(start), "outbox", outbox)
		touch(start)
	}
	cmds, err := pipe.Exec(ctx)
	if err == nil {
		return nil, nil
	}
	var missing []Batch
	for i, c := range scripts {
		if isNoScript(c.Err()) {
			missing = append(missing, batches[i])
		}
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil && !isNoScript(err) && !errors.Is(err, redis.Nil) {
			return nil, err
		}
	}
	if len(missing) == 0 {
		return nil, err
	}
	return missing, nil
}

func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// Feed reads one feed's items and polls in one round trip.
func (r *Redis) Feed(ctx context.Context, feedID string) (Feed, error) {
	keys := r.Keys(feedID)
	pipe := r.c.Pipeline()
	order := pipe.ZRevRange(ctx, keys[1], 0, -1)
	items := pipe.HGetAll(ctx, keys[0])
	polls := pipe.LRange(ctx, keys[2], 0, -1)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Feed{}, fmt.Errorf("history: read feed %s: %w", feedID, err)
	}
	var f Feed
	recs := items.Val()
	for _, id := range order.Val() {
		data, ok := recs[id]
		if !ok {
			continue
		}
		it, err := decodeItem(data)
		if err != nil {
			return Feed{}, fmt.Errorf("history: feed %s item %s: %w", feedID, id, err)
		}
		f.Items = append(f.Items, it)
	}
	var err error
	if f.Polls, err = decodePolls(polls.Val()); err != nil {
		return Feed{}, fmt.Errorf("history: feed %s: %w", feedID, err)
	}
	return f, nil
}

// Polls reads the last n polls of each feed in one round trip.
func (r *Redis) Polls(ctx context.Context, feedIDs []string, n int) (map[string][]Poll, error) {
	pipe := r.c.Pipeline()
	cmds := make([]*redis.StringSliceCmd, len(feedIDs))
	for i, id := range feedIDs {
		cmds[i] = pipe.LRange(ctx, r.Keys(id)[2], 0, int64(n-1))
	}
	if len(feedIDs) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("history: read polls: %w", err)
		}
	}
	out := make(map[string][]Poll, len(feedIDs))
	for i, id := range feedIDs {
		ps, err := decodePolls(cmds[i].Val())
		if err != nil {
			return nil, fmt.Errorf("history: feed %s: %w", id, err)
		}
		out[id] = ps
	}
	return out, nil
}

// Find reads every record of the feeds (a few hundred each) in one round
// trip and matches them here: a search is rare, and Redis has no index of
// titles to ask.
func (r *Redis) Find(ctx context.Context, feedIDs []string, q string, limit int) ([]Found, error) {
	q = strings.ToLower(strings.TrimSpace(q))
	if q == "" || len(feedIDs) == 0 {
		return nil, nil
	}
	pipe := r.c.Pipeline()
	cmds := make([]*redis.StringSliceCmd, len(feedIDs))
	for i, id := range feedIDs {
		cmds[i] = pipe.HVals(ctx, r.Keys(id)[0])
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("history: search: %w", err)
	}
	var out []Found
	for i, id := range feedIDs {
		for _, data := range cmds[i].Val() {
			it, err := decodeItem(data)
			if err != nil {
				return nil, fmt.Errorf("history: feed %s: %w", id, err)
			}
			if it.Matches(q) {
				out = append(out, Found{Feed: id, Item: it})
			}
		}
	}
	return sortFound(out, limit), nil
}

// Hours reads the hour counts in one round trip.
func (r *Redis) Hours(ctx context.Context, since, now time.Time) ([]Hour, error) {
	pipe := r.c.Pipeline()
	type hc struct {
		start int64
		cmd   *redis.MapStringStringCmd
	}
	var cmds []hc
	for h := hourOf(since); h <= hourOf(now); h += time.Hour.Milliseconds() {
		cmds = append(cmds, hc{h, pipe.HGetAll(ctx, r.hourKey(h))})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("history: read hours: %w", err)
	}
	stored := map[int64]Hour{}
	for _, c := range cmds {
		m := c.cmd.Val()
		if len(m) == 0 {
			continue
		}
		h := Hour{Start: c.start, Outbox: -1}
		h.Published, _ = strconv.Atoi(m["published"])
		h.Updated, _ = strconv.Atoi(m["updated"])
		h.Failed, _ = strconv.Atoi(m["failed"])
		if v, ok := m["outbox"]; ok {
			h.Outbox, _ = strconv.Atoi(v)
		}
		stored[c.start] = h
	}
	return fillHours(stored, since, now), nil
}

func decodeItem(data string) (Item, error) {
	return parseItemJSON([]byte(data))
}

func decodePolls(raw []string) ([]Poll, error) {
	out := make([]Poll, 0, len(raw))
	for _, data := range raw {
		var p Poll
		if err := json.Unmarshal([]byte(data), &p); err != nil {
			return nil, fmt.Errorf("decode poll record: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// sortFound orders found items by last activity, newest first, and keeps
// the first limit.
func sortFound(out []Found, limit int) []Found {
	slices.SortStableFunc(out, func(a, b Found) int {
		return cmp.Compare(b.Item.activity(), a.Item.activity())
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}
