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

// ErrLayout reports a store written with another key layout than this
// worker's: the layout before partitions with live workers of that version,
// or another number of partitions.
var ErrLayout = errors.New("dedupe: the store's key layout does not match")

// layoutVersion is written to P"layout" with the number of partitions.
const layoutVersion = "2"

// CheckLayout makes sure the store at this prefix uses this store's key
// layout, and upgrades the layout before partitions (every feed's keys
// under "P f:F:...", one global outbox "P q:...") in place:
//
//   - a store marked with this layout and number of partitions: nothing to
//     do;
//   - marked with another number of partitions: refused (ErrLayout), as
//     the feeds' keys would not be found;
//   - no mark and keys of the old layout (of feedIDs, or an old outbox):
//     refused while a worker of the old version still holds a feed lease
//     or a claim, else moved to the partitioned keys, then marked;
//   - no mark and no old keys: marked.
//
// The old layout only ever ran on a single server or Sentinel, where
// RENAME between any two keys works.
func (r *Redis) CheckLayout(ctx context.Context, feedIDs []string) error {
	mark := r.prefix + "layout"
	want := layoutVersion + "|" + strconv.Itoa(r.l.parts)
	got, err := r.c.Get(ctx, mark).Result()
	switch {
	case err == nil && got == want:
		return nil
	case err == nil:
		v, parts, _ := strings.Cut(got, "|")
		if v == layoutVersion {
			return fmt.Errorf("%w: redis.partitions: the store under prefix %q was written with %s partitions, this worker has %d: set redis.partitions: %s on every replica",
				ErrLayout, r.prefix, parts, r.l.parts, parts)
		}
		return fmt.Errorf("%w: the store under prefix %q is marked layout %q, this worker knows %q: run the matching feedworker version", ErrLayout, r.prefix, got, want)
	case !errors.Is(err, redis.Nil):
		return fmt.Errorf("redis layout check: %w", err)
	}
	legacy, err := r.legacyFeeds(ctx, feedIDs)
	if err != nil {
		return err
	}
	if legacy != nil {
		if err := r.migrateLegacy(ctx, legacy); err != nil {
			return err
		}
	}
	if err := r.c.SetNX(ctx, mark, want, 0).Err(); err != nil {
		return fmt.Errorf("redis layout mark: %w", err)
	}
	return r.CheckLayout(ctx, nil)
}

func (r *Redis) legacyKey(s string) string { return r.prefix + s }

// legacyFeeds returns the feeds with keys of the old layout (configured
// ones, and those named by the old outbox), or nil when there is none.
func (r *Redis) legacyFeeds(ctx context.Context, feedIDs []string) (map[string]bool, error) {
	q := make([]*redis.IntCmd, 0, 3)
	// One key per command: on a cluster, keys of several slots may not
	// share one.
	feeds := make([][2]*redis.IntCmd, len(feedIDs))
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range []string{"q:due", "q:dead", "q:data"} {
			q = append(q, p.Exists(ctx, r.legacyKey(k)))
		}
		for i, id := range feedIDs {
			feeds[i] = [2]*redis.IntCmd{p.Exists(ctx, r.legacyKey("f:"+id+":rec")), p.Exists(ctx, r.legacyKey("f:"+id+":val"))}
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("redis layout check: %w", err)
	}
	var out map[string]bool
	add := func(id string) {
		if out == nil {
			out = map[string]bool{}
		}
		out[id] = true
	}
	for i, c := range feeds {
		if c[0].Val()+c[1].Val() > 0 {
			add(feedIDs[i])
		}
	}
	outbox := false
	for _, c := range q {
		outbox = outbox || c.Val() > 0
	}
	if outbox {
		for _, k := range []string{"q:due", "q:dead"} {
			members, err := r.c.ZRange(ctx, r.legacyKey(k), 0, -1).Result()
			if err != nil {
				return nil, fmt.Errorf("redis layout check: %w", err)
			}
			for _, m := range members {
				if f, _, ok := strings.Cut(m, "/"); ok {
					add(f)
				}
			}
		}
		if out == nil {
			out = map[string]bool{}
		}
	}
	return out, nil
}

// migrateLegacy moves the old layout's keys to the partitioned ones. It
// refuses while old workers hold leases or claims, and runs under a lock
// so that replicas starting together migrate once.
func (r *Redis) migrateLegacy(ctx context.Context, feeds map[string]bool) error {
	lock := r.prefix + "layout-migration"
	ok, err := r.c.SetNX(ctx, lock, "1", time.Minute).Result()
	if err != nil {
		return fmt.Errorf("redis layout migration: %w", err)
	}
	if !ok {
		return fmt.Errorf("%w: another replica is moving the store under prefix %q to the partitioned layout; this worker retries when restarted", ErrLayout, r.prefix)
	}
	defer r.c.Del(context.WithoutCancel(ctx), lock)

	due, err := r.c.ZRangeWithScores(ctx, r.legacyKey("q:due"), 0, -1).Result()
	if err != nil {
		return fmt.Errorf("redis layout migration: %w", err)
	}
	dead, err := r.c.ZRangeWithScores(ctx, r.legacyKey("q:dead"), 0, -1).Result()
	if err != nil {
		return fmt.Errorf("redis layout migration: %w", err)
	}
	// A worker of the old version still running would keep writing the
	// old keys: refuse while any holds a lease or a claim.
	live := make([]*redis.IntCmd, 0, len(feeds)+len(due))
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for f := range feeds {
			live = append(live, p.Exists(ctx, r.legacyKey("lease:feed:"+f)))
		}
		for _, z := range due {
			live = append(live, p.Exists(ctx, r.legacyKey("claim:"+z.Member.(string))))
		}
		return nil
	}); err != nil {
		return fmt.Errorf("redis layout migration: %w", err)
	}
	for _, c := range live {
		if c.Val() > 0 {
			return fmt.Errorf("%w: the store under prefix %q has the layout of an older feedworker, and a worker of that version still holds a feed lease or a claim: stop every older worker (see README, \"Upgrading the store layout\"), then start this one again: it moves the keys itself",
				ErrLayout, r.prefix)
		}
	}

	data, err := r.c.HGetAll(ctx, r.legacyKey("q:data")).Result()
	if err != nil {
		return fmt.Errorf("redis layout migration: %w", err)
	}
	meta, err := r.c.HGetAll(ctx, r.legacyKey("q:meta")).Result()
	if err != nil {
		return fmt.Errorf("redis layout migration: %w", err)
	}
	runs, err := r.c.HGetAll(ctx, r.legacyKey("q:run")).Result()
	if err != nil {
		return fmt.Errorf("redis layout migration: %w", err)
	}
	move := func(p redis.Pipeliner, zs []redis.Z, set string) {
		for _, z := range zs {
			m := z.Member.(string)
			f, _, _ := strings.Cut(m, "/")
			p.ZAdd(ctx, r.qKey(f, set), z)
			if v, ok := data[m]; ok {
				p.HSet(ctx, r.qKey(f, "data"), m, v)
			}
			if v, ok := meta[m]; ok {
				p.HSet(ctx, r.qKey(f, "meta"), m, v)
			}
			if v, ok := runs[m]; ok {
				p.HSet(ctx, r.qKey(f, "run"), m, v)
			}
		}
	}
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		move(p, due, "due")
		move(p, dead, "dead")
		return nil
	}); err != nil {
		return fmt.Errorf("redis layout migration: outbox: %w", err)
	}
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range []string{"q:due", "q:dead", "q:data", "q:meta", "q:run"} {
			p.Del(ctx, r.legacyKey(k))
		}
		return nil
	}); err != nil {
		return fmt.Errorf("redis layout migration: old outbox: %w", err)
	}
	for f := range feeds {
		for _, suffix := range []string{"seen", "rec", "val"} {
			err := r.c.Rename(ctx, r.legacyKey("f:"+f+":"+suffix), r.feedKey(f, suffix)).Err()
			if err != nil && !strings.Contains(err.Error(), "no such key") {
				return fmt.Errorf("redis layout migration: feed %s: %w", f, err)
			}
		}
	}
	return nil
}
