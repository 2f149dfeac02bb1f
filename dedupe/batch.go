package dedupe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Batch operations. On Redis each one is a single round trip for many
// feeds or items, where the per-item methods of [Store] cost one each:
// taking the leases and loading the validators of every feed a pass is about
// to poll, giving the leases back after it, and recording the outcomes of
// deliveries that finished together. Callers reach them through these
// optional interfaces and fall back to the per-item methods for a store
// without them (bbolt is in-process: a loop costs no round trip there).
// Each item of a batch is applied as atomically as alone: a batch is a
// pipeline of the same scripts, not one transaction.

// LeaseBatcher takes and gives back many leases at once.
type LeaseBatcher interface {
	// AcquireLeases is [Store.AcquireLease] for each name; ok[i] says
	// whether owner holds names[i].
	AcquireLeases(ctx context.Context, names []string, owner string, ttl time.Duration) (ok []bool, err error)
	// RenewLeases is [Store.RenewLease] for each name; ok[i] says whether
	// owner still holds names[i].
	RenewLeases(ctx context.Context, names []string, owner string, ttl time.Duration) (ok []bool, err error)
	// ReleaseLeases is [Store.ReleaseLease] for each name.
	ReleaseLeases(ctx context.Context, names []string, owner string) error
}

// ValidatorsBatcher reads the validators of many feeds at once.
type ValidatorsBatcher interface {
	// ValidatorsMany is [Store.Validators] for each feed, in order.
	ValidatorsMany(ctx context.Context, feedIDs []string) (v []Validators, ok []bool, err error)
}

// SettleBatcher records many outcomes at once.
type SettleBatcher interface {
	// SettleMany is [Store.Settle] for each op, with one error per op (an
	// op may fail while others are recorded).
	SettleMany(ctx context.Context, owner string, ops []SettleOp, now time.Time) (held []bool, errs []error)
}

// SettleOp is one outcome for [SettleBatcher.SettleMany].
type SettleOp struct {
	Key        Key
	Settlement Settlement
}

// ClaimBatcher renews claims and records outcomes, many at once: the
// checks before sends and the outcomes of sends that reach the store
// together share one round trip.
type ClaimBatcher interface {
	// ClaimOps applies each op as [Store.RenewClaim] or [Store.Settle]
	// would, in order, with one result per op (an op may fail while
	// others are applied).
	ClaimOps(ctx context.Context, ops []ClaimOp, now time.Time) []ClaimResult
}

// LaterClaimBatcher is a ClaimBatcher that may hold ops whose callers do
// not wait on them (outcomes a sender has handed over) a few
// milliseconds for company: bbolt applies them in the transaction of its
// next write, such as the next claim, sparing a commit and its fsyncs;
// Redis in one pipeline with the others of those milliseconds, sparing
// round trips.
type LaterClaimBatcher interface {
	ClaimBatcher
	// ClaimOpsLater is ClaimOps, applied within a few milliseconds,
	// together with the store's other writes of that time where the
	// store can. It returns once the ops are durable, as ClaimOps does.
	ClaimOpsLater(ctx context.Context, ops []ClaimOp, now time.Time) []ClaimResult
}

// ClaimOp is one op of [ClaimBatcher.ClaimOps]: with Settle nil, a
// renewal of Owner's claim for TTL; otherwise the outcome Settle.
type ClaimOp struct {
	Key    Key
	Owner  string
	TTL    time.Duration
	Settle *Settlement
}

// ClaimResult is what one [ClaimOp] did: Held as Settle reports it, and for
// a renewal the [Renewal] (whose Held is the same).
type ClaimResult struct {
	Held    bool
	Renewal Renewal
	Err     error
}

var (
	_ LeaseBatcher      = (*Redis)(nil)
	_ ValidatorsBatcher = (*Redis)(nil)
	_ SettleBatcher     = (*Redis)(nil)
	_ ClaimBatcher      = (*Redis)(nil)
)

// leaseChunk bounds the keys of one lease script, so that a pass over
// thousands of feeds never blocks Redis for long in one script.
const leaseChunk = 500

// AcquireLeases implements [LeaseBatcher] with one script per 500 names,
// all in one pipeline.
func (r *Redis) AcquireLeases(ctx context.Context, names []string, owner string, ttl time.Duration) ([]bool, error) {
	if owner == "" || ttl < time.Millisecond {
		return nil, fmt.Errorf("acquire leases: %w: empty owner or ttl under 1ms", ErrInvalid)
	}
	return r.leaseAnswers(ctx, r.s.acquireLeases, "acquire", names, owner, ttl)
}

// RenewLeases implements [LeaseBatcher] like AcquireLeases.
func (r *Redis) RenewLeases(ctx context.Context, names []string, owner string, ttl time.Duration) ([]bool, error) {
	if owner == "" || ttl < time.Millisecond {
		return nil, fmt.Errorf("renew leases: %w: empty owner or ttl under 1ms", ErrInvalid)
	}
	return r.leaseAnswers(ctx, r.s.renewLeases, "renew", names, owner, ttl)
}

func (r *Redis) leaseAnswers(ctx context.Context, s *redis.Script, op string, names []string, owner string, ttl time.Duration) ([]bool, error) {
	cmds, groups, err := r.leaseBatch(ctx, s, names, owner, ttl.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("redis %s leases: %w", op, err)
	}
	out := make([]bool, len(names))
	for j, c := range cmds {
		v, err := c.Int64Slice()
		if err == nil && len(v) != len(groups[j]) {
			err = fmt.Errorf("%d answers for %d leases", len(v), len(groups[j]))
		}
		if err != nil {
			return nil, fmt.Errorf("redis %s leases: %w", op, err)
		}
		for k, i := range groups[j] {
			out[i] = v[k] == 1
		}
	}
	return out, nil
}

// ReleaseLeases implements [LeaseBatcher] like AcquireLeases.
func (r *Redis) ReleaseLeases(ctx context.Context, names []string, owner string) error {
	if owner == "" {
		return fmt.Errorf("release leases: %w: empty owner", ErrInvalid)
	}
	cmds, _, err := r.leaseBatch(ctx, r.s.releaseLeases, names, owner, 0)
	if err != nil {
		return fmt.Errorf("redis release leases: %w", err)
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return fmt.Errorf("redis release leases: %w", err)
		}
	}
	return nil
}

func (r *Redis) leaseBatch(ctx context.Context, s *redis.Script, names []string, owner string, ttlMS int64) ([]*redis.Cmd, [][]int, error) {
	for _, name := range names {
		if name == "" {
			return nil, nil, fmt.Errorf("%w: empty lease name", ErrInvalid)
		}
	}
	// A script's keys must share one slot: one script per partition.
	groups := r.groupByPartition(names, func(n string) string { return n })
	calls := make([]scriptCall, len(groups))
	for j, g := range groups {
		keys := make([]string, len(g))
		for k, i := range g {
			keys[k] = r.l.leaseKey(names[i])
		}
		calls[j] = scriptCall{keys: keys, args: []any{owner, ttlMS}}
	}
	cmds, err := r.runPipelined(ctx, s, calls)
	return cmds, groups, err
}

// ValidatorsMany implements [ValidatorsBatcher] in one pipeline.
func (r *Redis) ValidatorsMany(ctx context.Context, feedIDs []string) ([]Validators, []bool, error) {
	for _, id := range feedIDs {
		if err := checkFeedID(id); err != nil {
			return nil, nil, err
		}
	}
	cmds := make([]*redis.SliceCmd, len(feedIDs))
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range feedIDs {
			cmds[i] = p.HMGet(ctx, r.feedKey(id, "val"), "etag", "lm", "at")
		}
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("redis validators of %d feeds: %w", len(feedIDs), err)
	}
	v := make([]Validators, len(feedIDs))
	ok := make([]bool, len(feedIDs))
	for i, c := range cmds {
		vals := c.Val()
		if len(vals) != 3 || vals[2] == nil {
			continue
		}
		v[i].ETag, _ = vals[0].(string)
		v[i].LastModified, _ = vals[1].(string)
		ok[i] = true
	}
	return v, ok, nil
}

// SettleMany implements [SettleBatcher] with [Redis.ClaimOps].
func (r *Redis) SettleMany(ctx context.Context, owner string, ops []SettleOp, now time.Time) ([]bool, []error) {
	cops := make([]ClaimOp, len(ops))
	for i := range ops {
		cops[i] = ClaimOp{Key: ops[i].Key, Owner: owner, Settle: &ops[i].Settlement}
	}
	res := r.ClaimOps(ctx, cops, now)
	held := make([]bool, len(ops))
	errs := make([]error, len(ops))
	for i, x := range res {
		held[i], errs[i] = x.Held, x.Err
	}
	return held, errs
}

// ClaimOps implements [ClaimBatcher]: the settle script once per op, all
// in one pipeline.
func (r *Redis) ClaimOps(ctx context.Context, ops []ClaimOp, now time.Time) []ClaimResult {
	out := make([]ClaimResult, len(ops))
	names := make([]string, len(ops))
	calls := make([]scriptCall, 0, len(ops))
	idx := make([]int, 0, len(ops))
	for i, op := range ops {
		keys, args, name, err := r.claimOpArgs(op, now)
		if err != nil {
			out[i].Err = err
			continue
		}
		names[i] = name
		calls = append(calls, scriptCall{keys: keys, args: args})
		idx = append(idx, i)
	}
	if len(calls) == 0 {
		return out
	}
	cmds, err := r.runPipelined(ctx, r.s.settle, calls)
	for j, i := range idx {
		k := ops[i].Key
		if err != nil && cmds == nil {
			out[i].Err = fmt.Errorf("redis %s %s: %w", names[i], k, err)
			continue
		}
		res, cerr := cmds[j].Slice()
		if cerr == nil && len(res) != 2 {
			cerr = fmt.Errorf("unexpected reply %v", res)
		}
		if cerr != nil {
			out[i].Err = fmt.Errorf("redis %s %s: %w", names[i], k, cerr)
			continue
		}
		out[i].Held = res[0] == int64(1)
		if ops[i].Settle != nil {
			continue
		}
		rn := Renewal{Held: out[i].Held}
		if s, _ := res[1].(string); s != "" {
			rec, perr := parseRecord(s)
			if perr != nil {
				out[i].Err = fmt.Errorf("redis %s %s: %w", names[i], k, perr)
				continue
			}
			rn.Record, rn.Known = rec, true
		}
		out[i].Renewal = rn
	}
	return out
}

// scriptCall is one run of a script in a pipeline.
type scriptCall struct {
	keys []string
	args []any
}

// runPipelined runs s once per call in one pipeline, by digest. Calls that
// found the script missing (a restarted Redis: NOSCRIPT, not run) are run
// again after loading it. The commands carry each call's answer or error;
// err is set only when the pipeline as a whole failed.
func (r *Redis) runPipelined(ctx context.Context, s *redis.Script, calls []scriptCall) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(calls))
	exec := func(which []int) error {
		_, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range which {
				cmds[i] = s.EvalSha(ctx, p, calls[i].keys, calls[i].args...)
			}
			return nil
		})
		return err
	}
	all := make([]int, len(calls))
	for i := range all {
		all[i] = i
	}
	err := exec(all)
	var missing []int
	for i, c := range cmds {
		if c != nil && isNoScript(c.Err()) {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		if lerr := s.Load(ctx, r.c).Err(); lerr != nil {
			return nil, fmt.Errorf("load script: %w", lerr)
		}
		err = exec(missing)
	}
	if err != nil && !isReplyError(err) {
		// A transport failure: no answer can be trusted.
		return nil, err
	}
	return cmds, nil
}

// isReplyError tells an error Redis answered (per command, in the
// commands) from a failure of the connection.
func isReplyError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}
