package dedupe_test

import (
	"context"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// batchedBolt is the bbolt store with its per-item methods answered by its
// batch interfaces, so that the contract suite checks that a batch of one
// does exactly what the method does.
type batchedBolt struct{ *dedupe.Bolt }

func (b batchedBolt) RenewClaim(ctx context.Context, k dedupe.Key, owner string, ttl time.Duration) (dedupe.Renewal, error) {
	r := b.ClaimOps(ctx, []dedupe.ClaimOp{{Key: k, Owner: owner, TTL: ttl}}, time.Now())[0]
	return r.Renewal, r.Err
}

func (b batchedBolt) Settle(ctx context.Context, k dedupe.Key, owner string, s dedupe.Settlement, now time.Time) (bool, error) {
	held, errs := b.SettleMany(ctx, owner, []dedupe.SettleOp{{Key: k, Settlement: s}}, now)
	return held[0], errs[0]
}

func (b batchedBolt) Validators(ctx context.Context, feedID string) (dedupe.Validators, bool, error) {
	v, ok, err := b.ValidatorsMany(ctx, []string{feedID})
	if err != nil {
		return dedupe.Validators{}, false, err
	}
	return v[0], ok[0], nil
}

func (b batchedBolt) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	ok, err := b.AcquireLeases(ctx, []string{name}, owner, ttl)
	if err != nil {
		return false, err
	}
	return ok[0], nil
}

func (b batchedBolt) RenewLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	ok, err := b.RenewLeases(ctx, []string{name}, owner, ttl)
	if err != nil {
		return false, err
	}
	return ok[0], nil
}

func (b batchedBolt) ReleaseLease(ctx context.Context, name, owner string) error {
	return b.ReleaseLeases(ctx, []string{name}, owner)
}

func TestBoltBatchContract(t *testing.T) {
	testContract(t, func(t *testing.T, o dedupe.RedisOptions) dedupe.Store {
		return batchedBolt{openBolt(t, o).(*dedupe.Bolt)}
	})
}

// TestBoltSettleMany checks that outcomes recorded together end as they do
// one by one, an invalid one failing alone.
func TestBoltSettleMany(t *testing.T) {
	s := openBolt(t, dedupe.RedisOptions{}).(*dedupe.Bolt)
	checkSettleMany(t, s, nil)
}
