package dedupe

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// AcquireLease implements [Store.AcquireLease].
func (b *Bolt) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	return b.lease(ctx, "acquire", name, owner, ttl)
}

// RenewLease implements [Store.RenewLease].
func (b *Bolt) RenewLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	return b.lease(ctx, "renew", name, owner, ttl)
}

// ReleaseLease implements [Store.ReleaseLease].
func (b *Bolt) ReleaseLease(ctx context.Context, name, owner string) error {
	_, err := b.lease(ctx, "release", name, owner, 0)
	return err
}

func (b *Bolt) lease(ctx context.Context, op, name, owner string, ttl time.Duration) (bool, error) {
	if name == "" || owner == "" {
		return false, fmt.Errorf("%s lease: %w: empty name or owner", op, ErrInvalid)
	}
	if op != "release" && ttl < time.Millisecond {
		return false, fmt.Errorf("%s lease %q: %w: ttl under 1ms", op, name, ErrInvalid)
	}
	var ok bool
	err := b.update(ctx, op+" lease "+name, func(tx *bolt.Tx) error {
		var err error
		ok, err = leaseTx(tx, op, name, owner, ttl)
		return err
	})
	if err != nil {
		return false, err
	}
	return ok, nil
}

// leaseTx is one lease operation ("acquire", "renew" or "release") inside
// a write transaction.
func leaseTx(tx *bolt.Tx, op, name, owner string, ttl time.Duration) (bool, error) {
	leases := tx.Bucket(bLeases)
	wall := time.Now().UnixMilli()
	holder, live := claimedBy(leases, name, wall)
	mine := live && holder == owner
	switch {
	case op == "release":
		if mine {
			return true, leases.Delete([]byte(name))
		}
		return false, nil
	case mine || (op == "acquire" && !live):
		return true, leases.Put([]byte(name), append(u64(wall+ttl.Milliseconds()), owner...))
	}
	return false, nil
}
