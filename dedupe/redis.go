package dedupe

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOptions configure [NewRedis]. Zero fields take the defaults.
type RedisOptions struct {
	// Prefix starts every key (default [DefaultPrefix]).
	Prefix string
	// Retention is how long an item that left its feed is remembered
	// (default [DefaultRetention]).
	Retention time.Duration
	// SweepLimit bounds how many expired items one Diff deletes (default
	// [DefaultSweepLimit]), so one poll never stalls Redis.
	SweepLimit int
	// Partitions is how many shards the outbox, dead letters and claims
	// are split into (default [DefaultPartitions], at most
	// [MaxPartitions]). Every replica of a deployment must use the same
	// number: a feed's keys are found by its partition.
	Partitions int
	// WaitReplicas, when above zero, makes Claim wait (WAIT, up to 1s)
	// until that many replicas have its writes before it returns: the
	// pending marks then survive a Sentinel failover. Single server and
	// Sentinel only (a cluster client has no one connection to wait on).
	WaitReplicas int
}

// Redis is the [Store] on Redis 5.0 or newer: a single server, a Sentinel
// set or a Redis Cluster, through any [redis.UniversalClient]. See the
// package doc for its data model.
type Redis struct {
	c          redis.UniversalClient
	prefix     string
	retention  time.Duration
	sweepLimit int
	l          layout
	// settleKeys are the settle script's keys per partition (q:due,
	// q:dead, q:data, q:meta, q:run), made once: a delivery's outcome
	// built them per call. Read only: go-redis copies them into its
	// command.
	settleKeys [][]string
	s          scripts
	fl         feedLeaseScripts
	// waitReplicas is RedisOptions.WaitReplicas.
	waitReplicas int
	// next is the partition the next Claim starts from; it starts at a
	// random one per process, so that replicas do not all drain the same
	// partition first.
	next atomic.Uint32
	// dead is what the last Heartbeat found (see heartbeat.go).
	dead deadOwners
	// afterStep, set by tests only, runs after each step of a Diff or
	// Commit cut into several.
	afterStep stepHook
	// later gathers the outcomes handed over (redis_later.go); linger is
	// how long it waits for company.
	later  laterGroup
	linger time.Duration
}

var _ Store = (*Redis)(nil)

// NewRedis returns a store on c. The store owns c: Close closes it. The
// prefix must not contain "{" or "}" (config validation refuses it): the
// store adds its own hash tags.
func NewRedis(c redis.UniversalClient, o RedisOptions) *Redis {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.SweepLimit <= 0 {
		o.SweepLimit = DefaultSweepLimit
	}
	if o.Partitions <= 0 {
		o.Partitions = DefaultPartitions
	}
	o.Partitions = min(o.Partitions, MaxPartitions)
	r := &Redis{c: c, prefix: o.Prefix, retention: o.Retention, sweepLimit: o.SweepLimit,
		l: newLayout(o.Prefix, o.Partitions), s: newScripts(), fl: newFeedLeaseScripts(), waitReplicas: o.WaitReplicas,
		linger: redisLaterLinger}
	r.settleKeys = make([][]string, o.Partitions)
	for p := range r.settleKeys {
		r.settleKeys[p] = []string{r.l.qKey(p, "due"), r.l.qKey(p, "dead"), r.l.qKey(p, "data"), r.l.qKey(p, "meta"), r.l.qKey(p, "run")}
	}
	r.next.Store(rand.Uint32())
	return r
}

// Close closes the Redis client.
func (r *Redis) Close() error { return r.c.Close() }

func (r *Redis) feedKey(feedID, suffix string) string { return r.l.feedKey(feedID, suffix) }

// qKey names an outbox key of feedID's partition.
func (r *Redis) qKey(feedID, suffix string) string { return r.l.qKey(r.l.partitionOf(feedID), suffix) }

// Diff implements [Store.Diff]: one script per step (steps.go), one in
// all for a fetch of up to stepItems items.
func (r *Redis) Diff(ctx context.Context, feedID string, items []Item, v *Validators, now time.Time) (Diff, error) {
	if err := checkItems(feedID, items); err != nil {
		return Diff{}, err
	}
	keys := []string{r.feedKey(feedID, "seen"), r.feedKey(feedID, "rec"), r.feedKey(feedID, "val"), r.qKey(feedID, "data")}
	op := fmt.Sprintf("redis diff feed %q", feedID)
	spans := stepSpans(len(items), nil)
	d := Diff{Status: make([]Status, 0, len(items))}
	for i, sp := range spans {
		if err := beforeStep(ctx, op, i, len(spans)); err != nil {
			return Diff{}, err
		}
		last := i == len(spans)-1
		// Validators are stored by the last step, and only when no
		// earlier one found anything new or changed; the sweep runs once,
		// after every item of the fetch is refreshed.
		store, etag, lm := "0", "", ""
		if v != nil && last && !d.Dirty() {
			store, etag, lm = "1", v.ETag, v.LastModified
		}
		limit := 0
		if last {
			limit = r.sweepLimit
		}
		part := items[sp.lo:sp.hi]
		args := make([]any, 0, 9+2*len(part))
		args = append(args, ms(now), ms(now.Add(-r.retention)), limit, store, etag, lm, feedID, len(part))
		for _, it := range part {
			args = append(args, it.ExternalID, it.Hash)
		}
		args = append(args, fenceArg(v))
		res, err := r.s.diff.Run(ctx, r.c, keys, args...).Slice()
		if err != nil {
			return Diff{}, fmt.Errorf("%s: %w", op, fenceErr(err))
		}
		if len(res) != 4 {
			return Diff{}, fmt.Errorf("%s: unexpected reply %v", op, res)
		}
		codes, _ := res[0].(string)
		if len(codes) != len(part) {
			return Diff{}, fmt.Errorf("%s: %d verdicts for %d items", op, len(codes), len(part))
		}
		for j := range len(codes) {
			d.Status = append(d.Status, Status(codes[j]))
		}
		if i == 0 {
			// Known as the feed was before this call.
			d.Known = res[1] == int64(1)
		}
		if last {
			d.ValidatorsStored = res[2] == int64(1)
			if n, ok := res[3].(int64); ok {
				d.Expired = int(n)
			}
		}
		if len(spans) > 1 && r.afterStep != nil {
			r.afterStep("diff", i+1)
		}
	}
	return d, nil
}

// Commit implements [Store.Commit]: one script per step (steps.go), one
// in all for up to stepItems changes.
func (r *Redis) Commit(ctx context.Context, feedID string, changes []Change, v *Validators, now time.Time) ([]Outcome, error) {
	return r.commit(ctx, feedID, changes, v, nil, now)
}

// commit is Commit whose last step also sets the aliases of feedID (in
// its slot) among own in the same script; own's other aliases are left
// out.
func (r *Redis) commit(ctx context.Context, feedID string, changes []Change, v *Validators, own []Alias, now time.Time) ([]Outcome, error) {
	if err := checkChanges(feedID, changes); err != nil {
		return nil, err
	}
	keys := []string{
		r.feedKey(feedID, "seen"), r.feedKey(feedID, "rec"), r.feedKey(feedID, "val"),
		r.qKey(feedID, "due"), r.qKey(feedID, "dead"), r.qKey(feedID, "data"), r.qKey(feedID, "meta"), r.qKey(feedID, "run"),
	}
	op := fmt.Sprintf("redis commit feed %q", feedID)
	spans := stepSpans(len(changes), func(i int) int { return changes[i].size() })
	out := make([]Outcome, 0, len(changes))
	nOwn := ownAliases(own, feedID) // the last step sets them
	for i, sp := range spans {
		if err := beforeStep(ctx, op, i, len(spans)); err != nil {
			return nil, err
		}
		last := i == len(spans)-1
		store, etag, lm := "0", "", ""
		if v != nil && last {
			store, etag, lm = "1", v.ETag, v.LastModified
		}
		part := changes[sp.lo:sp.hi]
		args := make([]any, 0, 8+6*len(part))
		args = append(args, ms(now), feedID, store, etag, lm, len(part))
		for _, c := range part {
			args = append(args, c.ExternalID, c.Hash, c.Type, string(c.Action), c.Data, c.Tail)
		}
		args = append(args, fenceArg(v), boolArg(last))
		if last && nOwn > 0 {
			args = slices.Grow(args, 2+3*nOwn)
			args = append(args, nOwn, r.aliasKey(AliasFP{FeedID: feedID}))
			args = r.appendOwnAliases(args, own, feedID)
		}
		codes, err := r.s.commit.Run(ctx, r.c, keys, args...).Text()
		if err != nil {
			if i > 0 {
				return nil, fmt.Errorf("%s: step %d of %d (the earlier steps are recorded): %w", op, i+1, len(spans), fenceErr(err))
			}
			return nil, fmt.Errorf("%s: %w", op, fenceErr(err))
		}
		if len(codes) != len(part) {
			return nil, fmt.Errorf("%s: %d outcomes for %d changes", op, len(codes), len(part))
		}
		for j := range len(codes) {
			out = append(out, Outcome(codes[j]))
		}
		if len(spans) > 1 && r.afterStep != nil {
			r.afterStep("commit", i+1)
		}
	}
	return out, nil
}

// appendOwnAliases appends the commit script's arguments for the aliases
// of feedID in as: fingerprint, value and TTL (ms) each. The values are
// cut out of one buffer (go-redis sends a []byte as it sends a string),
// and a TTL's argument is made once for a run of aliases that share it: a
// string and a boxed number per alias were most of what a commit
// allocated for its aliases.
func (r *Redis) appendOwnAliases(args []any, as []Alias, feedID string) []any {
	size := 0
	for i := range as {
		if a := &as[i]; a.FeedID == feedID {
			size += len(a.Target.FeedID) + len(a.Target.ExternalID) + len(a.Type) + len(a.Extra) + 3
		}
	}
	// Each value is cut out of buf as it is written: a value that
	// outgrows the estimate moves buf, and the values cut before keep
	// the old array.
	buf := make([]byte, 0, size)
	var ttl time.Duration
	var ttlArg any
	for i := range as {
		a := &as[i]
		if a.FeedID != feedID {
			continue
		}
		if t := r.aliasTTL(*a); ttlArg == nil || t != ttl {
			ttl, ttlArg = t, t.Milliseconds()
		}
		start := len(buf)
		buf = appendAliasValue(buf, *a)
		args = append(args, a.FP, buf[start:len(buf):len(buf)], ttlArg)
	}
	return args
}

// ownAliases counts the aliases of feedID in as.
func ownAliases(as []Alias, feedID string) int {
	n := 0
	for i := range as {
		if as[i].FeedID == feedID {
			n++
		}
	}
	return n
}

// Validators implements [Store.Validators].
func (r *Redis) Validators(ctx context.Context, feedID string) (Validators, bool, error) {
	if err := checkFeedID(feedID); err != nil {
		return Validators{}, false, err
	}
	vals, err := r.c.HMGet(ctx, r.feedKey(feedID, "val"), "etag", "lm", "at").Result()
	if err != nil {
		return Validators{}, false, fmt.Errorf("redis validators of feed %q: %w", feedID, err)
	}
	if vals[2] == nil {
		return Validators{}, false, nil
	}
	etag, _ := vals[0].(string)
	lm, _ := vals[1].(string)
	return Validators{ETag: etag, LastModified: lm}, true, nil
}

// Record implements [Store.Record] in one pipeline.
func (r *Redis) Record(ctx context.Context, k Key) (Record, bool, error) {
	if err := k.check(); err != nil {
		return Record{}, false, err
	}
	var rec *redis.StringCmd
	var seen *redis.FloatCmd
	_, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		rec = p.HGet(ctx, r.feedKey(k.FeedID, "rec"), k.ExternalID)
		seen = p.ZScore(ctx, r.feedKey(k.FeedID, "seen"), k.ExternalID)
		return nil
	})
	if errors.Is(err, redis.Nil) && errors.Is(rec.Err(), redis.Nil) {
		return Record{}, false, nil
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return Record{}, false, fmt.Errorf("redis record %s: %w", k, err)
	}
	out, err := parseRecord(rec.Val())
	if err != nil {
		return Record{}, false, fmt.Errorf("redis record %s: %w", k, err)
	}
	out.LastSeen = fromMS(int64(seen.Val()))
	return out, true, nil
}

// Settle implements [Store.Settle] in one script.
func (r *Redis) Settle(ctx context.Context, k Key, owner string, s Settlement, now time.Time) (bool, error) {
	res := r.ClaimOps(ctx, []ClaimOp{{Key: k, Owner: owner, Settle: &s}}, now)
	return res[0].Held, res[0].Err
}

// RenewClaim implements [Store.RenewClaim] in one script (the settle
// script's compare-and-pexpire), so that renewals travel in the same
// pipeline as the outcomes of other deliveries ([ClaimBatcher]).
func (r *Redis) RenewClaim(ctx context.Context, k Key, owner string, ttl time.Duration) (Renewal, error) {
	res := r.ClaimOps(ctx, []ClaimOp{{Key: k, Owner: owner, TTL: ttl}}, time.Now())
	return res[0].Renewal, res[0].Err
}

// claimOpArgs checks one op and builds the settle script's keys and
// arguments; name says what the op is, for errors.
func (r *Redis) claimOpArgs(op ClaimOp, now time.Time) (keys []string, args []any, name string, err error) {
	if err := op.Key.check(); err != nil {
		return nil, nil, "", err
	}
	if op.Owner == "" {
		return nil, nil, "", fmt.Errorf("claim op %s: %w: empty owner", op.Key, ErrInvalid)
	}
	p := r.l.partitionOf(op.Key.FeedID)
	keys, tag := r.settleKeys[p], r.l.tag(p)
	if op.Settle == nil {
		if op.TTL < time.Millisecond {
			return nil, nil, "", fmt.Errorf("renew claim %s: %w: ttl under 1ms", op.Key, ErrInvalid)
		}
		args = []any{tag, op.Key.String(), op.Owner, "renew", ms(now), "", "", "", 0, 0, "", "0", "0", op.TTL.Milliseconds(), ""}
		return keys, args, "renew claim", nil
	}
	s := op.Settle
	kind, err := s.kindName()
	if err != nil {
		return nil, nil, "", err
	}
	for _, f := range [...][2]string{{"hash", s.Hash}, {"type", s.Type}, {"run", s.Run}} {
		if err := checkToken(f[0], f[1]); err != nil {
			return nil, nil, "", err
		}
	}
	cid := ""
	if s.ContentID != 0 {
		cid = strconv.FormatInt(s.ContentID, 10)
	}
	args = []any{tag, op.Key.String(), op.Owner, kind, ms(now), cid, s.Type, s.Hash, ms(s.Next),
		s.Status, oneLine(s.Reason), boolArg(s.Ambiguous), boolArg(s.ForgetContent), 0, s.Run}
	return keys, args, "settle (" + kind + ")", nil
}

// AcquireLease implements [Store.AcquireLease] (SET NX PX, or extend if
// owned).
func (r *Redis) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	return r.lease(ctx, r.s.acquireLease, "acquire", name, owner, ttl)
}

// RenewLease implements [Store.RenewLease] (compare-and-pexpire).
func (r *Redis) RenewLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	return r.lease(ctx, r.s.renewLease, "renew", name, owner, ttl)
}

// ReleaseLease implements [Store.ReleaseLease] (compare-and-delete).
func (r *Redis) ReleaseLease(ctx context.Context, name, owner string) error {
	_, err := r.lease(ctx, r.s.releaseLease, "release", name, owner, 0)
	return err
}

func (r *Redis) lease(ctx context.Context, s *redis.Script, op, name, owner string, ttl time.Duration) (bool, error) {
	if name == "" || owner == "" {
		return false, fmt.Errorf("%s lease: %w: empty name or owner", op, ErrInvalid)
	}
	if op != "release" && ttl < time.Millisecond {
		return false, fmt.Errorf("%s lease %q: %w: ttl under 1ms", op, name, ErrInvalid)
	}
	n, err := s.Run(ctx, r.c, []string{r.l.leaseKey(name)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("redis %s lease %q: %w", op, name, err)
	}
	return n == 1, nil
}

func (s Settlement) kindName() (string, error) {
	switch s.Kind {
	case Delivered:
		if s.ContentID <= 0 {
			return "", fmt.Errorf("settle delivered: %w: no content id", ErrInvalid)
		}
		return "delivered", nil
	case Retry:
		if s.Next.IsZero() {
			return "", fmt.Errorf("settle retry: %w: no next attempt time", ErrInvalid)
		}
		return "retry", nil
	case Dead:
		return "dead", nil
	case Removed:
		return "removed", nil
	case Release:
		return "release", nil
	case Aliased:
		return "aliased", nil
	}
	return "", fmt.Errorf("settle: %w: unknown kind %d", ErrInvalid, s.Kind)
}

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// oneLine keeps reasons on one line so a listing stays readable.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// parseRecord decodes "1|hash|phash|cid|type|first|pub|pend|state".
func parseRecord(s string) (Record, error) {
	var f [9]string
	if !splitFields(s, f[:]) || f[0] != "1" {
		return Record{}, fmt.Errorf("malformed record %q", s)
	}
	var r Record
	var err error
	r.Hash, r.PublishedHash, r.Type, r.PendingHash = f[1], f[2], f[4], f[7]
	if f[3] != "" {
		if r.ContentID, err = strconv.ParseInt(f[3], 10, 64); err != nil {
			return Record{}, fmt.Errorf("malformed record %q: content id: %w", s, err)
		}
	}
	first, err1 := parseMSField(f[5])
	pub, err2 := parseMSField(f[6])
	if err := errors.Join(err1, err2); err != nil {
		return Record{}, fmt.Errorf("malformed record %q: %w", s, err)
	}
	r.FirstSeen, r.LastPublished = first, pub
	if f[8] != "" {
		r.State = State(f[8][0])
	}
	return r, nil
}

type meta struct {
	attempts int
	enqueued int64
	hash     string
	status   int
	reason   string
}

// splitFields is strings.SplitN(s, "|", len(f)) into f, without
// allocating; false if s has fewer fields.
func splitFields(s string, f []string) bool {
	for i := range len(f) - 1 {
		var ok bool
		if f[i], s, ok = strings.Cut(s, "|"); !ok {
			return false
		}
	}
	f[len(f)-1] = s
	return true
}

// parseMeta decodes "attempts|enqueued|hash|status|reason".
func parseMeta(s string) (meta, error) {
	var f [5]string
	if !splitFields(s, f[:]) {
		return meta{}, fmt.Errorf("malformed outbox meta %q", s)
	}
	a, err1 := strconv.Atoi(f[0])
	enq, err2 := strconv.ParseInt(f[1], 10, 64)
	st, err3 := strconv.Atoi(f[3])
	if err := errors.Join(err1, err2, err3); err != nil {
		return meta{}, fmt.Errorf("malformed outbox meta %q: %w", s, err)
	}
	return meta{attempts: a, enqueued: enq, hash: f[2], status: st, reason: f[4]}, nil
}

// parseRun decodes "run|length"; malformed values count as no run, which
// only restarts the count.
func parseRun(s string) (string, int) {
	run, n, ok := strings.Cut(s, "|")
	length, err := strconv.Atoi(n)
	if !ok || err != nil || run == "" || length <= 0 {
		return "", 0
	}
	return run, length
}

func parseMSField(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return fromMS(v), nil
}
