package dedupe_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/redis/go-redis/v9"
)

// TestRedisLayoutUpgrade writes a store in the layout before partitions
// (what an older feedworker left: one feed's keys and one global outbox)
// and checks that CheckLayout refuses while an old worker holds a lease,
// then moves everything, and that the moved state works.
func TestRedisLayoutUpgrade(t *testing.T) {
	c, prefix := dedupetest.Redis(t)
	ctx := context.Background()
	rec := "1|h1||||1700000000000|||"
	c.HSet(ctx, prefix+"f:feed1:rec", "a", rec, "b", rec)
	c.ZAdd(ctx, prefix+"f:feed1:seen", redisZ("a", 1.7e12), redisZ("b", 1.7e12))
	c.HSet(ctx, prefix+"f:feed1:val", "etag", "e1", "lm", "", "at", "1700000000000")
	c.ZAdd(ctx, prefix+"q:due", redisZ("feed1/a", float64(t0.UnixMilli())))
	c.ZAdd(ctx, prefix+"q:dead", redisZ("feed1/b", float64(t0.UnixMilli())))
	for _, m := range []string{"feed1/a", "feed1/b"} {
		c.HSet(ctx, prefix+"q:data", m, "payload "+m)
		c.HSet(ctx, prefix+"q:meta", m, "0|1700000000000|h1|0|")
	}
	c.Set(ctx, prefix+"lease:feed:feed1", "old-worker", time.Minute)

	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix, Partitions: 4})
	if err := s.CheckLayout(ctx, []string{"feed1"}); !errors.Is(err, dedupe.ErrLayout) {
		t.Fatalf("CheckLayout with an old worker's lease live = %v; want ErrLayout", err)
	} else {
		t.Logf("refused as expected: %v", err)
	}
	c.Del(ctx, prefix+"lease:feed:feed1")
	if err := s.CheckLayout(ctx, []string{"feed1"}); err != nil {
		t.Fatalf("CheckLayout: %v", err)
	}
	if n, _ := c.Exists(ctx, prefix+"q:due", prefix+"q:dead", prefix+"f:feed1:rec", prefix+"f:feed1:val").Result(); n != 0 {
		t.Errorf("%d old keys left after the migration", n)
	}
	v, ok, err := s.Validators(ctx, "feed1")
	if err != nil || !ok || v.ETag != "e1" {
		t.Errorf("validators after migration = %+v, %v, %v; want etag e1", v, ok, err)
	}
	d := mustDiff(t, s, "feed1", items("a", "h1", "b", "h1", "c", "h"), nil, t0)
	if !d.Known || !slices.Equal(d.Status, statuses("uun")) {
		t.Errorf("diff after migration = %+v; want known, a and b unchanged, c new", d)
	}
	st := mustStats(t, s, t0)
	if st.Outbox != 1 || st.DeadLetters != 1 {
		t.Errorf("stats after migration = %+v; want one queued, one dead", st)
	}
	cl := mustClaim(t, s, "w", 10, t0)
	if len(cl) != 1 || cl[0].Key.ExternalID != "a" || string(cl[0].Data) != "payload feed1/a" {
		t.Errorf("claim after migration = %+v; want feed1/a with its payload", cl)
	}
	// Marked: a second check is a no-op; another partition count is refused.
	if err := s.CheckLayout(ctx, []string{"feed1"}); err != nil {
		t.Errorf("second CheckLayout: %v", err)
	}
	other := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix, Partitions: 8})
	if err := other.CheckLayout(ctx, nil); !errors.Is(err, dedupe.ErrLayout) {
		t.Errorf("CheckLayout with 8 partitions on a 4-partition store = %v; want ErrLayout", err)
	}
}

func redisZ(m string, score float64) redis.Z { return redis.Z{Member: m, Score: score} }
