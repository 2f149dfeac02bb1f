package dedupe

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Heartbeats is implemented by stores shared by several worker processes
// (Redis). Every live process refreshes a heartbeat key of its own; the
// claims of a process whose heartbeat is gone are taken by the next Claim
// of another at once, rather than when they expire (claim TTL), through
// the same pending mark and look-up as any claimed item.
//
// A claim's owner is the process name, then "#" and a sequence number
// (see publish): the part before the last "#" names the process.
//
// It is not [Membership], which shares the feeds out among the workers
// running the poller (a sorted set of the live ones): a claim is only
// taken from a process that registered here and then went silent, never
// from one that merely is not listed (a `feedworker once`, say).
//
// The embedded store does not implement it: bbolt's file lock already
// proves the previous process dead, and its claims are offered again when
// the file is opened (BoltOptions.ReclaimDelay).
type Heartbeats interface {
	// OwnerHeartbeat records that process is alive for ttl and returns
	// the processes whose heartbeat is gone; the next Claim may take their
	// claims. Processes silent for longer than forget are forgotten (their
	// claims have expired by then).
	OwnerHeartbeat(ctx context.Context, process string, ttl, forget time.Duration) (dead []string, err error)
	// OwnerLeave removes a process that has settled every claim it held.
	OwnerLeave(ctx context.Context, process string) error
	// DeadOwnerItems counts items due and still claimed by a process whose
	// heartbeat is gone (at most a few thousand are looked at).
	DeadOwnerItems(ctx context.Context) (int, error)
}

var _ Heartbeats = (*Redis)(nil)

// ClaimProcess is the process part of a claim owner ("host/pid/n#7" →
// "host/pid/n").
func ClaimProcess(owner string) string {
	if i := strings.LastIndexByte(owner, '#'); i >= 0 {
		return owner[:i]
	}
	return owner
}

// deadOwners is what the last Heartbeat found; Claim passes it to the
// claim script.
type deadOwners struct {
	mu   sync.Mutex
	list []string
}

func (d *deadOwners) set(l []string) {
	d.mu.Lock()
	d.list = l
	d.mu.Unlock()
}

func (d *deadOwners) get() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.list
}

// hbKey is a process's heartbeat: one key per process, so that each is a
// single-key command on Redis Cluster too (no script reads one: the claim
// script gets the dead processes as arguments). ownersKey registers the
// processes by the time of their last heartbeat.
func (r *Redis) hbKey(process string) string { return r.prefix + "hb:" + process }
func (r *Redis) ownersKey() string           { return r.prefix + "owners" }

// OwnerHeartbeat implements [Heartbeats.OwnerHeartbeat] in two round trips: the
// refresh with the registry read, then an EXISTS per other process
// (single-key commands: Cluster-legal, and no script reads another slot).
func (r *Redis) OwnerHeartbeat(ctx context.Context, process string, ttl, forget time.Duration) ([]string, error) {
	if process == "" || ttl <= 0 {
		return nil, fmt.Errorf("heartbeat: %w: want a process and ttl > 0", ErrInvalid)
	}
	now := time.Now()
	// The heartbeat first, on its own: only then is the process listed.
	// On a Cluster the two keys live on different nodes, and a pipeline
	// sends to each at once; listed before its heartbeat was written, a
	// starting worker was seen by another as dead, which took its claims
	// away mid-send (two POSTs of one item).
	if err := r.c.Set(ctx, r.hbKey(process), "1", ttl).Err(); err != nil {
		return nil, fmt.Errorf("redis heartbeat: %w", err)
	}
	var others *redis.StringSliceCmd
	_, err := r.c.Pipelined(ctx, func(pl redis.Pipeliner) error {
		pl.ZAdd(ctx, r.ownersKey(), redis.Z{Score: float64(now.UnixMilli()), Member: process})
		if forget > 0 {
			pl.ZRemRangeByScore(ctx, r.ownersKey(), "-inf", "("+strconv.FormatInt(now.Add(-forget).UnixMilli(), 10))
		}
		others = pl.ZRange(ctx, r.ownersKey(), 0, -1)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redis heartbeat: %w", err)
	}
	names := slices.DeleteFunc(others.Val(), func(s string) bool { return s == process })
	if len(names) == 0 {
		r.dead.set(nil)
		return nil, nil
	}
	exists := make([]*redis.IntCmd, len(names))
	_, err = r.c.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, n := range names {
			exists[i] = pl.Exists(ctx, r.hbKey(n))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redis heartbeat: %w", err)
	}
	var dead []string
	for i, n := range names {
		if exists[i].Val() == 0 {
			dead = append(dead, n)
		}
	}
	r.dead.set(dead)
	return dead, nil
}

// OwnerLeave implements [Heartbeats.OwnerLeave].
func (r *Redis) OwnerLeave(ctx context.Context, process string) error {
	_, err := r.c.Pipelined(ctx, func(pl redis.Pipeliner) error {
		pl.ZRem(ctx, r.ownersKey(), process)
		pl.Del(ctx, r.hbKey(process))
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis leave: %w", err)
	}
	return nil
}

// deadArgs are the claim script's arguments after the fixed ones: the
// processes whose heartbeat is gone.
func (r *Redis) deadArgs() []any {
	dead := r.dead.get()
	out := make([]any, len(dead))
	for i, d := range dead {
		out[i] = d
	}
	return out
}

// deadScan bounds how many due entries DeadOwnerItems looks at.
const deadScan = 2000

// DeadOwnerItems implements [Heartbeats.DeadOwnerItems] with the dead
// processes the last OwnerHeartbeat found: per partition, the due entries
// (up to deadScan) whose claim names one of them.
func (r *Redis) DeadOwnerItems(ctx context.Context) (int, error) {
	dead := r.dead.get()
	if len(dead) == 0 {
		return 0, nil
	}
	max := strconv.FormatInt(time.Now().UnixMilli(), 10)
	total := 0
	for p := range r.l.parts {
		members, err := r.c.ZRangeByScore(ctx, r.l.qKey(p, "due"), &redis.ZRangeBy{Min: "-inf", Max: max, Count: deadScan}).Result()
		if err != nil {
			return 0, fmt.Errorf("redis dead owner items: %w", err)
		}
		tag := r.l.tag(p)
		n, err := r.countDeadClaims(ctx, dead, members, func(m string) string { return tag + "claim:" + m })
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// countDeadClaims counts the members whose claim key names a dead process.
func (r *Redis) countDeadClaims(ctx context.Context, dead, members []string, claimKey func(string) string) (int, error) {
	if len(members) == 0 {
		return 0, nil
	}
	gets := make([]*redis.StringCmd, len(members))
	_, err := r.c.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, m := range members {
			gets[i] = pl.Get(ctx, claimKey(m))
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return 0, fmt.Errorf("redis dead owner items: %w", err)
	}
	n := 0
	for _, g := range gets {
		if owner := g.Val(); owner != "" && slices.Contains(dead, ClaimProcess(owner)) {
			n++
		}
	}
	return n, nil
}
