package dedupe_test

import (
	"context"
	"fmt"
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
	ctx := t.Context()
	var ch []dedupe.Change
	for i := range 6 {
		ch = append(ch, change(fmt.Sprint("item", i), "h1", dedupe.ActionPublish))
	}
	mustCommit(t, s, "f", ch, nil, t0)
	claimed := mustClaim(t, s, "w", 6, t0)
	if len(claimed) != 6 {
		t.Fatalf("claimed %d, want 6", len(claimed))
	}
	ops := []dedupe.SettleOp{
		{Key: claimed[0].Key, Settlement: dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 10, Type: "story", Hash: "h1"}},
		{Key: claimed[1].Key, Settlement: dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 11, Type: "story", Hash: "h1"}},
		{Key: claimed[2].Key, Settlement: dedupe.Settlement{Kind: dedupe.Retry, Next: t0.Add(time.Hour), Status: 503, Reason: "busy"}},
		{Key: claimed[3].Key, Settlement: dedupe.Settlement{Kind: dedupe.Dead, Status: 400, Reason: "bad"}},
		{Key: claimed[4].Key, Settlement: dedupe.Settlement{Kind: dedupe.Delivered}}, // no content id: invalid
	}
	held, errs := s.SettleMany(ctx, "w", ops, t0)
	for i, want := range []bool{true, true, true, true, false} {
		if held[i] != want {
			t.Errorf("op %d held = %v, want %v", i, held[i], want)
		}
	}
	for i, err := range errs {
		if wantErr := i == 4; (err != nil) != wantErr {
			t.Errorf("op %d error = %v, want error %v", i, err, wantErr)
		}
	}
	for i, want := range []int64{10, 11} {
		if r := mustRecord(t, s, "f", claimed[i].Key.ExternalID); r.ContentID != want || r.PendingHash != "" {
			t.Errorf("record %d = %+v, want content %d and no pending mark", i, r, want)
		}
	}
	if st := mustStats(t, s, t0); st.Outbox != 3 || st.DeadLetters != 1 || st.Due != 2 {
		t.Errorf("stats = %+v, want outbox 3 (due 2), dead letters 1", st)
	}
}
