package dedupe

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Feed leases with fencing tokens on bbolt ([FeedLeaser]): the lease is in
// the "leases" bucket under "feed:F" (as [Bolt.AcquireLease] keeps it),
// the token under "fence" in the feed's "val" bucket.

// AcquireFeedLeases implements [FeedLeaser] in one transaction.
func (b *Bolt) AcquireFeedLeases(ctx context.Context, feedIDs []string, owner string, ttl time.Duration) ([]int64, error) {
	return b.feedLeases(ctx, "acquire", feedIDs, owner, ttl)
}

// RenewFeedLeases implements [FeedLeaser] in one transaction.
func (b *Bolt) RenewFeedLeases(ctx context.Context, feedIDs []string, owner string, ttl time.Duration) ([]bool, error) {
	v, err := b.feedLeases(ctx, "renew", feedIDs, owner, ttl)
	if err != nil {
		return nil, err
	}
	ok := make([]bool, len(v))
	for i, n := range v {
		ok[i] = n != 0
	}
	return ok, nil
}

// ReleaseFeedLeases implements [FeedLeaser] in one transaction.
func (b *Bolt) ReleaseFeedLeases(ctx context.Context, feedIDs []string, owner string) error {
	_, err := b.feedLeases(ctx, "release", feedIDs, owner, 0)
	return err
}

func (b *Bolt) feedLeases(ctx context.Context, op string, feedIDs []string, owner string, ttl time.Duration) ([]int64, error) {
	if owner == "" || (op != "release" && ttl < time.Millisecond) {
		return nil, fmt.Errorf("%s feed leases: %w: empty owner or ttl under 1ms", op, ErrInvalid)
	}
	for _, id := range feedIDs {
		if err := checkFeedID(id); err != nil {
			return nil, err
		}
	}
	out := make([]int64, len(feedIDs))
	err := b.update(ctx, op+" feed leases", func(tx *bolt.Tx) error {
		leases := tx.Bucket(bLeases)
		wall := time.Now().UnixMilli()
		for i, id := range feedIDs {
			name := leaseName(id)
			holder, live := claimedBy(leases, name, wall)
			mine := live && holder == owner
			switch {
			case op == "release":
				if mine {
					out[i] = 1
					if err := leases.Delete([]byte(name)); err != nil {
						return err
					}
				}
				continue
			case op == "renew" && !mine, op == "acquire" && live && !mine:
				continue
			}
			if err := leases.Put([]byte(name), append(u64(wall+ttl.Milliseconds()), owner...)); err != nil {
				return err
			}
			f, err := feedOf(tx, id, true)
			if err != nil {
				return err
			}
			tok := fromU64(f.val.Get([]byte("fence")))
			if !mine || tok == 0 {
				// A new holding: the token grows, so whatever the previous
				// holder still tries to store is refused.
				tok++
				if err := f.val.Put([]byte("fence"), u64(tok)); err != nil {
					return err
				}
			}
			out[i] = tok
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkFence refuses a write under a fencing token that is not the feed's.
func (f *feedBuckets) checkFence(v *Validators) error {
	if v == nil || v.Fence == 0 {
		return nil
	}
	cur := f.val.Get([]byte("fence"))
	if cur != nil && fromU64(cur) != v.Fence {
		return fmt.Errorf("%w: stored token %d, caller's %d", ErrFenced, fromU64(cur), v.Fence)
	}
	return nil
}
