package dedupe

import (
	"context"
	"errors"
	"time"
)

// ErrFenced reports a Diff or Commit refused because the feed's lease was
// taken by another owner since the caller's fencing token was issued
// ([Validators].Fence): the caller polled without the lease, and what it
// fetched must not overwrite what the new holder stores.
var ErrFenced = errors.New("dedupe: feed lease taken over (fencing token is stale)")

// FeedLeaser holds feed leases with fencing tokens. Each time a lease
// passes to a new holding (taken while free or expired), the feed's token,
// kept with its validators, grows by one; extending a lease one already
// holds keeps the token. [Store.Diff] and [Store.Commit] given a
// [Validators].Fence other than the stored token store nothing and fail
// with [ErrFenced], so a holder that lost its lease during a pause cannot
// overwrite the work of the next.
type FeedLeaser interface {
	// AcquireFeedLeases takes or extends the lease of each feed for owner
	// for ttl. tokens[i] is the fencing token of feedIDs[i], or 0 when
	// another owner holds it.
	AcquireFeedLeases(ctx context.Context, feedIDs []string, owner string, ttl time.Duration) (tokens []int64, err error)
	// RenewFeedLeases extends the leases owner still holds; ok[i] says
	// whether it held feedIDs[i].
	RenewFeedLeases(ctx context.Context, feedIDs []string, owner string, ttl time.Duration) (ok []bool, err error)
	// ReleaseFeedLeases gives up the leases owner holds.
	ReleaseFeedLeases(ctx context.Context, feedIDs []string, owner string) error
}

var (
	_ FeedLeaser = (*Redis)(nil)
	_ FeedLeaser = (*Bolt)(nil)
)
