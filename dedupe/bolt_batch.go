package dedupe

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The batch interfaces on bbolt: each batch is one write transaction (one
// commit, one fsync) where the per-item methods cost one each, and the
// transaction is group-committed with other writes waiting (see
// bolt_group.go). Each operation of a batch is applied as it would be
// alone; the batch as a whole is also atomic.

var (
	_ LeaseBatcher      = (*Bolt)(nil)
	_ ValidatorsBatcher = (*Bolt)(nil)
	_ SettleBatcher     = (*Bolt)(nil)
	_ ClaimBatcher      = (*Bolt)(nil)
	_ LaterClaimBatcher = (*Bolt)(nil)
)

// AcquireLeases implements [LeaseBatcher] in one transaction.
func (b *Bolt) AcquireLeases(ctx context.Context, names []string, owner string, ttl time.Duration) ([]bool, error) {
	return b.leases(ctx, "acquire", names, owner, ttl)
}

// RenewLeases implements [LeaseBatcher] in one transaction.
func (b *Bolt) RenewLeases(ctx context.Context, names []string, owner string, ttl time.Duration) ([]bool, error) {
	return b.leases(ctx, "renew", names, owner, ttl)
}

// ReleaseLeases implements [LeaseBatcher] in one transaction.
func (b *Bolt) ReleaseLeases(ctx context.Context, names []string, owner string) error {
	_, err := b.leases(ctx, "release", names, owner, 0)
	return err
}

func (b *Bolt) leases(ctx context.Context, op string, names []string, owner string, ttl time.Duration) ([]bool, error) {
	if owner == "" || (op != "release" && ttl < time.Millisecond) {
		return nil, fmt.Errorf("%s leases: %w: empty owner or ttl under 1ms", op, ErrInvalid)
	}
	for _, name := range names {
		if name == "" {
			return nil, fmt.Errorf("%s leases: %w: empty lease name", op, ErrInvalid)
		}
	}
	ok := make([]bool, len(names))
	if len(names) == 0 {
		return ok, nil
	}
	err := b.update(ctx, fmt.Sprintf("%s %d leases", op, len(names)), func(tx *bolt.Tx) error {
		for i, name := range names {
			var err error
			if ok[i], err = leaseTx(tx, op, name, owner, ttl); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ok, nil
}

// ValidatorsMany implements [ValidatorsBatcher] in one read transaction.
func (b *Bolt) ValidatorsMany(ctx context.Context, feedIDs []string) ([]Validators, []bool, error) {
	for _, id := range feedIDs {
		if err := checkFeedID(id); err != nil {
			return nil, nil, err
		}
	}
	v := make([]Validators, len(feedIDs))
	ok := make([]bool, len(feedIDs))
	err := b.view(ctx, fmt.Sprintf("validators of %d feeds", len(feedIDs)), func(tx *bolt.Tx) error {
		for i, id := range feedIDs {
			f, err := feedOf(tx, id, false)
			if err != nil {
				return err
			}
			if f == nil || f.val.Get([]byte("at")) == nil {
				continue
			}
			ok[i] = true
			v[i] = Validators{ETag: string(f.val.Get([]byte("etag"))), LastModified: string(f.val.Get([]byte("lm")))}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return v, ok, nil
}

// SettleMany implements [SettleBatcher] with [Bolt.ClaimOps].
func (b *Bolt) SettleMany(ctx context.Context, owner string, ops []SettleOp, now time.Time) ([]bool, []error) {
	cops := make([]ClaimOp, len(ops))
	for i := range ops {
		cops[i] = ClaimOp{Key: ops[i].Key, Owner: owner, Settle: &ops[i].Settlement}
	}
	res := b.ClaimOps(ctx, cops, now)
	held := make([]bool, len(ops))
	errs := make([]error, len(ops))
	for i, x := range res {
		held[i], errs[i] = x.Held, x.Err
	}
	return held, errs
}

// ClaimOps implements [ClaimBatcher]: every op in one transaction, in
// order. If one fails there, the transaction is rolled back and each op
// runs in its own, so that it fails alone.
func (b *Bolt) ClaimOps(ctx context.Context, ops []ClaimOp, now time.Time) []ClaimResult {
	return b.claimOps(ctx, ops, now, b.update)
}

// ClaimOpsLater implements [LaterClaimBatcher]: ClaimOps, its transaction
// held for a while (groupCommitter.writeCtx with later) to be committed with the
// store's next write that does not wait, such as the next claim.
func (b *Bolt) ClaimOpsLater(ctx context.Context, ops []ClaimOp, now time.Time) []ClaimResult {
	return b.claimOps(ctx, ops, now, b.updateLater)
}

func (b *Bolt) claimOps(ctx context.Context, ops []ClaimOp, now time.Time, update func(context.Context, string, func(*bolt.Tx) error) error) []ClaimResult {
	out := make([]ClaimResult, len(ops))
	names := make([]string, len(ops))
	valid := make([]int, 0, len(ops))
	for i, op := range ops {
		name, err := checkClaimOp(op)
		names[i] = name
		if err != nil {
			out[i].Err = err
			continue
		}
		valid = append(valid, i)
	}
	if len(valid) == 0 {
		return out
	}
	nowMS := ms(now)
	apply := func(tx *bolt.Tx, o outbox, i int) error {
		op := ops[i]
		if op.Settle != nil {
			held, err := settleTx(tx, o, op.Key, op.Owner, *op.Settle, nowMS)
			out[i] = ClaimResult{Held: held}
			return err
		}
		rn, err := renewTx(tx, o, op.Key, op.Owner, op.TTL)
		out[i] = ClaimResult{Held: rn.Held, Renewal: rn}
		return err
	}
	err := update(ctx, fmt.Sprintf("%d claim ops", len(valid)), func(tx *bolt.Tx) error {
		o := outboxOf(tx)
		for _, i := range valid {
			if err := apply(tx, o, i); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		return out
	}
	for _, i := range valid {
		err := b.update(ctx, names[i]+" "+ops[i].Key.String(), func(tx *bolt.Tx) error { return apply(tx, outboxOf(tx), i) })
		if err != nil {
			out[i] = ClaimResult{Err: err}
		}
	}
	return out
}

// checkClaimOp checks an op as Settle or RenewClaim would and names it.
func checkClaimOp(op ClaimOp) (string, error) {
	if err := op.Key.check(); err != nil {
		return "", err
	}
	if op.Owner == "" {
		return "claim op", fmt.Errorf("claim op %s: %w: empty owner", op.Key, ErrInvalid)
	}
	if op.Settle == nil {
		if op.TTL < time.Millisecond {
			return "renew claim", fmt.Errorf("renew claim %s: %w: empty owner or ttl under 1ms", op.Key, ErrInvalid)
		}
		return "renew claim", nil
	}
	kind, err := op.Settle.kindName()
	if err != nil {
		return "settle", err
	}
	for _, f := range [...][2]string{{"hash", op.Settle.Hash}, {"type", op.Settle.Type}, {"run", op.Settle.Run}} {
		if err := checkToken(f[0], f[1]); err != nil {
			return "settle", err
		}
	}
	return "settle (" + kind + ")", nil
}
