package dedupe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The outbox, dead letters and claims are split into partitions (see the
// package doc): the operations here visit several of them.

// partitionOrder is every partition once, starting at the next one in
// turn: each Claim starts one further, from a random start per process.
func (r *Redis) partitionOrder() []int {
	n := r.l.parts
	start := int(r.next.Add(1) % uint32(n))
	out := make([]int, n)
	for i := range out {
		out[i] = (start + i) % n
	}
	return out
}

func (r *Redis) claimKeys(p int) []string {
	return []string{r.l.qKey(p, "due"), r.l.qKey(p, "data"), r.l.qKey(p, "meta"), r.l.qKey(p, "run")}
}

// Claim implements [Store.Claim]. Partitions are taken in turn: one
// pipeline runs the claim script on the first partition and reads the
// earliest entry of every other; when the first did not fill max, the
// script runs on the others that have due entries, one after the other,
// until max is reached. A busy outbox costs one round trip per claim, an
// idle one too.
func (r *Redis) Claim(ctx context.Context, owner string, max int, ttl time.Duration, now time.Time) ([]Claimed, time.Time, error) {
	if max <= 0 || owner == "" || ttl <= 0 {
		return nil, time.Time{}, fmt.Errorf("claim: %w: want an owner, max > 0 and ttl > 0", ErrInvalid)
	}
	var c claimConn = r.c
	var conn *redis.Conn
	if cl, ok := r.c.(*redis.Client); ok && r.waitReplicas > 0 {
		// WAIT covers the writes of its own connection: claim on one.
		conn = cl.Conn()
		defer conn.Close()
		c = conn
	}
	out, next, err := r.claim(ctx, c, owner, max, ttl, now)
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(out) > 0 && conn != nil {
		// The pending marks just set must survive a failover before
		// anything is POSTed: a promoted replica without them would let
		// the next claim post again. A shortfall is not an error: with
		// min-replicas-to-write on the servers, the claim itself would
		// have been refused.
		_ = conn.Wait(ctx, r.waitReplicas, time.Second).Err()
	}
	return out, next, nil
}

// claimConn is what Claim runs on: the client, or one connection of it.
type claimConn interface {
	redis.Scripter
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

func (r *Redis) claim(ctx context.Context, c claimConn, owner string, max int, ttl time.Duration, now time.Time) ([]Claimed, time.Time, error) {
	order := r.partitionOrder()
	dead := r.deadArgs()
	args := func(p, n int) []any {
		return append([]any{ms(now), n, ttl.Milliseconds(), owner, r.l.tag(p)}, dead...)
	}
	var first *redis.Cmd
	peeks := make([]*redis.ZSliceCmd, len(order))
	_, err := c.Pipelined(ctx, func(pl redis.Pipeliner) error {
		first = r.s.claim.EvalSha(ctx, pl, r.claimKeys(order[0]), args(order[0], max)...)
		for i, p := range order[1:] {
			peeks[i+1] = pl.ZRangeWithScores(ctx, r.l.qKey(p, "due"), 0, 0)
		}
		return nil
	})
	if err != nil && !isReplyError(err) {
		return nil, time.Time{}, fmt.Errorf("redis claim: %w", err)
	}
	if isNoScript(first.Err()) {
		first = r.s.claim.Run(ctx, c, r.claimKeys(order[0]), args(order[0], max)...)
	}
	out, next, err := parseClaim(first)
	if err != nil {
		return nil, time.Time{}, err
	}
	nowMS := float64(ms(now))
	var due []int
	for i, p := range order[1:] {
		zs, err := peeks[i+1].Result()
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("redis claim: earliest entry of partition %d: %w", p, err)
		}
		if len(zs) == 0 {
			continue
		}
		if zs[0].Score <= nowMS {
			due = append(due, p)
		} else {
			next = earliest(next, zs[0].Score)
		}
	}
	for _, p := range due {
		if len(out) >= max {
			break
		}
		got, n, err := parseClaim(r.s.claim.Run(ctx, c, r.claimKeys(p), args(p, max-len(out))...))
		if err != nil {
			return nil, time.Time{}, err
		}
		out = append(out, got...)
		next = earliest(next, n)
	}
	if len(out) > 0 {
		return out, time.Time{}, nil
	}
	if next == math.MaxFloat64 {
		return nil, time.Time{}, nil
	}
	return nil, fromMS(int64(next)), nil
}

// earliest keeps the smaller of two due times (ms); math.MaxFloat64 means
// none.
func earliest(a, b float64) float64 { return min(a, b) }

// parseClaim decodes the claim script's reply: the claimed entries and the
// earliest unclaimed due time (math.MaxFloat64 when none).
func parseClaim(cmd *redis.Cmd) ([]Claimed, float64, error) {
	res, err := cmd.Slice()
	if err != nil {
		return nil, 0, fmt.Errorf("redis claim: %w", err)
	}
	if len(res) != 2 {
		return nil, 0, fmt.Errorf("redis claim: unexpected reply %v", res)
	}
	rows, _ := res[0].([]any)
	out := make([]Claimed, 0, len(rows))
	for _, row := range rows {
		f, _ := row.([]any)
		if len(f) != 5 {
			return nil, 0, fmt.Errorf("redis claim: unexpected row %v", row)
		}
		member, _ := f[0].(string)
		data, _ := f[1].(string)
		meta, _ := f[2].(string)
		recs, _ := f[3].(string)
		run, _ := f[4].(string)
		k, err := ParseKey(member)
		if err != nil {
			return nil, 0, fmt.Errorf("redis claim: %w", err)
		}
		c := Claimed{Key: k, Data: data}
		m, err := parseMeta(meta)
		if err != nil {
			return nil, 0, fmt.Errorf("redis claim %s: %w", k, err)
		}
		c.Hash, c.Attempts, c.Enqueued = m.hash, m.attempts, fromMS(m.enqueued)
		if recs != "" {
			if c.Record, err = parseRecord(recs); err != nil {
				return nil, 0, fmt.Errorf("redis claim %s: %w", k, err)
			}
		}
		c.Run, c.RunLength = parseRun(run)
		out = append(out, c)
	}
	next := math.MaxFloat64
	if s, _ := res[1].(string); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("redis claim: next due %q: %w", s, err)
		}
		next = f
	}
	return out, next, nil
}

// DeadLetters implements [Store.DeadLetters] in two round trips: the dead
// letters of every partition, then their payloads and metadata.
func (r *Redis) DeadLetters(ctx context.Context) ([]DeadLetter, error) {
	lists := make([]*redis.ZSliceCmd, r.l.parts)
	if _, err := r.c.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for p := range lists {
			lists[p] = pl.ZRangeWithScores(ctx, r.l.qKey(p, "dead"), 0, -1)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("redis dead letters: %w", err)
	}
	type entry struct {
		p      int
		member string
		at     float64
	}
	var all []entry
	for p, c := range lists {
		for _, z := range c.Val() {
			m, _ := z.Member.(string)
			all = append(all, entry{p, m, z.Score})
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	data := make([]*redis.StringCmd, len(all))
	meta := make([]*redis.StringCmd, len(all))
	if _, err := r.c.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, e := range all {
			data[i] = pl.HGet(ctx, r.l.qKey(e.p, "data"), e.member)
			meta[i] = pl.HGet(ctx, r.l.qKey(e.p, "meta"), e.member)
		}
		return nil
	}); err != nil && !isReplyError(err) {
		return nil, fmt.Errorf("redis dead letters: %w", err)
	}
	out := make([]DeadLetter, 0, len(all))
	for i, e := range all {
		k, err := ParseKey(e.member)
		if err != nil {
			return nil, fmt.Errorf("redis dead letters: %w", err)
		}
		d := DeadLetter{ID: e.member, Key: k, At: fromMS(int64(e.at))}
		if s, err := data[i].Result(); err == nil {
			d.Data = []byte(s)
		}
		if s, err := meta[i].Result(); err == nil {
			m, err := parseMeta(s)
			if err != nil {
				return nil, fmt.Errorf("redis dead letter %s: %w", e.member, err)
			}
			d.Hash, d.Attempts, d.Status, d.Reason, d.Enqueued = m.hash, m.attempts, m.status, m.reason, fromMS(m.enqueued)
		}
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b DeadLetter) int { return a.At.Compare(b.At) })
	return out, nil
}

// RetryDeadLetter implements [Store.RetryDeadLetter] in the item's
// partition.
func (r *Redis) RetryDeadLetter(ctx context.Context, id string, now time.Time) (bool, error) {
	k, err := ParseKey(id)
	if err != nil {
		return false, err
	}
	n, err := r.retryDead(ctx, []int{r.l.partitionOf(k.FeedID)}, id, now)
	return n == 1, err
}

// RetryDeadLetters implements [Store.RetryDeadLetters]: the retry script
// once per partition, in one pipeline.
func (r *Redis) RetryDeadLetters(ctx context.Context, now time.Time) (int, error) {
	all := make([]int, r.l.parts)
	for p := range all {
		all[p] = p
	}
	return r.retryDead(ctx, all, "", now)
}

func (r *Redis) retryDead(ctx context.Context, parts []int, id string, now time.Time) (int, error) {
	calls := make([]scriptCall, len(parts))
	for i, p := range parts {
		keys := []string{r.l.qKey(p, "due"), r.l.qKey(p, "dead"), r.l.qKey(p, "meta"), r.l.qKey(p, "run")}
		calls[i] = scriptCall{keys: keys, args: []any{r.l.tag(p), ms(now), id}}
	}
	cmds, err := r.runPipelined(ctx, r.s.retryDead, calls)
	if err != nil {
		return 0, fmt.Errorf("redis retry dead letters: %w", err)
	}
	total := 0
	for _, c := range cmds {
		n, err := c.Int()
		if err != nil {
			return total, fmt.Errorf("redis retry dead letters: %w", err)
		}
		total += n
	}
	return total, nil
}

// Stats implements [Store.Stats] in one pipeline over every partition.
func (r *Redis) Stats(ctx context.Context, now time.Time) (Stats, error) {
	type counts struct{ outbox, dead, due *redis.IntCmd }
	cs := make([]counts, r.l.parts)
	if _, err := r.c.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for p := range cs {
			cs[p] = counts{
				outbox: pl.ZCard(ctx, r.l.qKey(p, "due")),
				dead:   pl.ZCard(ctx, r.l.qKey(p, "dead")),
				due:    pl.ZCount(ctx, r.l.qKey(p, "due"), "-inf", strconv.FormatInt(ms(now), 10)),
			}
		}
		return nil
	}); err != nil {
		return Stats{}, fmt.Errorf("redis stats: %w", err)
	}
	var st Stats
	for _, c := range cs {
		st.Outbox += int(c.outbox.Val())
		st.DeadLetters += int(c.dead.Val())
		st.Due += int(c.due.Val())
	}
	return st, nil
}

// PartitionLoad is one partition's share of the outbox: what an operator
// (and the cluster test) looks at to see that no partition carries all the
// traffic.
type PartitionLoad struct {
	Partition   int
	Tag         string
	Outbox      int
	DeadLetters int
}

// Partitions reports every partition's outbox and dead-letter counts, in
// one pipeline.
func (r *Redis) Partitions(ctx context.Context) ([]PartitionLoad, error) {
	out := make([]PartitionLoad, r.l.parts)
	due := make([]*redis.IntCmd, r.l.parts)
	dead := make([]*redis.IntCmd, r.l.parts)
	if _, err := r.c.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for p := range out {
			due[p] = pl.ZCard(ctx, r.l.qKey(p, "due"))
			dead[p] = pl.ZCard(ctx, r.l.qKey(p, "dead"))
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("redis partitions: %w", err)
	}
	for p := range out {
		out[p] = PartitionLoad{Partition: p, Tag: r.l.tag(p), Outbox: int(due[p].Val()), DeadLetters: int(dead[p].Val())}
	}
	return out, nil
}

// PartitionTag is the start of every key of partition p: the prefix and
// the partition's hash tag.
func (r *Redis) PartitionTag(p int) string { return r.l.tag(p) }

// PartitionOf is the partition a feed's keys and outbox entries live in.
func (r *Redis) PartitionOf(feedID string) int { return r.l.partitionOf(feedID) }

func isNoScript(err error) bool {
	return err != nil && (redis.HasErrorPrefix(err, "NOSCRIPT") || errors.Is(err, redis.ErrNoScript))
}
