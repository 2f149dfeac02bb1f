package dedupe

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// RateBudget is one API request budget shared by every worker on the same
// Redis and prefix (api.shared_rate_limit): a GCRA token bucket
// (github.com/go-redis/redis_rate) in a single key, so it is legal on
// Redis Cluster as on a single server. It implements acs.Budget.
type RateBudget struct {
	l   *redis_rate.Limiter
	key string
}

// rateScale turns a fractional rate into the library's whole requests
// per period: rate*rateScale requests per rateScale seconds is the same
// emission interval, to a thousandth of a request per second.
const rateScale = 1000

// RateBudget returns the store's shared API request budget.
func (r *Redis) RateBudget() *RateBudget {
	return &RateBudget{l: redis_rate.NewLimiter(r.c), key: r.prefix + "api:rate"}
}

// Take asks for one request at rate per second with burst; it returns 0
// when it may go now, else how long to wait before asking again. The
// rate and burst are those of the caller at that moment: workers that
// learned the same limit share it, and a worker that learned a lower one
// sends at most its own rate.
func (b *RateBudget) Take(ctx context.Context, rate float64, burst int) (time.Duration, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return 0, fmt.Errorf("shared rate budget: rate %v: want a positive number", rate)
	}
	lim := redis_rate.Limit{Rate: max(1, int(math.Round(rate*rateScale))), Burst: max(1, burst), Period: rateScale * time.Second}
	res, err := b.l.Allow(ctx, b.key, lim)
	if err != nil {
		return 0, fmt.Errorf("shared rate budget: %w", err)
	}
	if res.Allowed > 0 {
		return 0, nil
	}
	return max(res.RetryAfter, time.Millisecond), nil
}
