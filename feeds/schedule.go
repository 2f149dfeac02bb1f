package feeds

import (
	"math/rand/v2"
	"time"

	"github.com/feedworker/feedworker/config"
)

// DefaultJitter spreads polls by ±10% so feeds added together, or a fleet
// restarted together, do not poll in lock-step. The other schedule
// defaults are config.Default's (http section, defaults.interval).
const DefaultJitter = 0.1

// Schedule decides when feeds are polled. It is pure: the caller passes the
// current time and the random source, so tests can drive it with a fixed
// clock and seed.
type Schedule struct {
	// DefaultInterval applies to feeds that set no interval.
	DefaultInterval time.Duration
	// MinInterval and MaxInterval bound every feed's interval. MinInterval is
	// also the shortest delay ever returned (politeness floor); MaxInterval
	// caps how far a ttl or Cache-Control hint can push the next poll.
	MinInterval time.Duration
	MaxInterval time.Duration
	// MaxBackoff caps the delay after consecutive failures (but never below
	// the feed's own interval). There is no limit on failures: a feed that
	// has been failing for a week is still polled every MaxBackoff.
	MaxBackoff time.Duration
	// Jitter is the fraction by which delays are randomly spread.
	Jitter float64
}

// NewSchedule returns the schedule for the http section of the config.
func NewSchedule(h config.HTTP) Schedule {
	def := config.Default()
	s := Schedule{
		DefaultInterval: def.Defaults.Interval.D(),
		MinInterval:     h.MinInterval.D(),
		MaxInterval:     h.MaxInterval.D(),
		MaxBackoff:      h.MaxBackoff.D(),
		Jitter:          DefaultJitter,
	}
	if s.MinInterval <= 0 {
		s.MinInterval = def.HTTP.MinInterval.D()
	}
	if s.MaxInterval <= 0 {
		s.MaxInterval = def.HTTP.MaxInterval.D()
	}
	s.MaxInterval = max(s.MaxInterval, s.MinInterval)
	if s.MaxBackoff <= 0 {
		s.MaxBackoff = def.HTTP.MaxBackoff.D()
	}
	return s
}

// Interval returns the base interval of a feed: its own (nil: the default),
// clamped to [MinInterval, MaxInterval].
func (s Schedule) Interval(own *config.Duration) time.Duration {
	d := s.DefaultInterval
	if d <= 0 {
		d = config.Default().Defaults.Interval.D()
	}
	if own != nil && own.D() > 0 {
		d = own.D()
	}
	return min(max(d, s.MinInterval), s.MaxInterval)
}

// StartSpread is the window over which feeds seen for the first time are
// polled. Operators expect a worker to poll as soon as it starts; spreading
// the first polls over a few seconds (the global and per-host limits bound
// the burst anyway) keeps them from firing in one instant, and the jitter of
// every later poll keeps feeds from staying in lock-step.
const StartSpread = 5 * time.Second

// First returns when a feed seen for the first time is polled: a uniformly
// random point within StartSpread, or within its interval if shorter.
func (s Schedule) First(now time.Time, interval time.Duration, rnd *rand.Rand) time.Time {
	window := min(interval, StartSpread)
	if window <= 0 {
		return now
	}
	return now.Add(time.Duration(rnd.Int64N(int64(window))))
}

// Outcome is what the schedule needs to know about the poll that just ended.
type Outcome struct {
	// Failures is the number of consecutive failed polls, this one included;
	// zero after a success (200 or 304).
	Failures int
	// RetryAfter is the server's Retry-After on a 429/503.
	RetryAfter time.Duration
	// Hint is Result.Hint of a successful poll.
	Hint time.Duration
}

// Next returns when to poll again after a poll that ended at now.
func (s Schedule) Next(now time.Time, interval time.Duration, o Outcome, rnd *rand.Rand) time.Time {
	return now.Add(s.Delay(interval, o, rnd))
}

// Delay returns the wait after a poll with outcome o, for a feed whose base
// interval (see Interval) is interval.
//
//   - Success: the interval ±Jitter. A hint longer than the interval (ttl,
//     max-age, Expires) replaces it, capped at MaxInterval, and is then only
//     jittered upwards, so we never come back before the server asked.
//   - Failure n: interval·2^(n-1), capped at max(MaxBackoff, interval), ±Jitter
//     (the spread keeps a recovering host from being hit by every feed at
//     once). A Retry-After longer than that is honoured, capped at the larger
//     of MaxBackoff and MaxInterval so a silly value cannot stop polling, and
//     again only jittered upwards.
//
// The result is never below MinInterval.
func (s Schedule) Delay(interval time.Duration, o Outcome, rnd *rand.Rand) time.Duration {
	base := min(max(interval, s.MinInterval), s.MaxInterval)
	var d time.Duration
	if o.Failures <= 0 {
		d = s.spread(base, rnd)
		if o.Hint > base {
			h := min(o.Hint, s.MaxInterval)
			d = min(s.upward(h, rnd), s.MaxInterval)
		}
		return max(d, s.MinInterval)
	}

	ceiling := max(s.MaxBackoff, base)
	d = base
	for i := 1; i < o.Failures && d < ceiling; i++ {
		d *= 2
	}
	d = min(s.spread(min(d, ceiling), rnd), ceiling)
	if ra := min(o.RetryAfter, max(s.MaxBackoff, s.MaxInterval)); ra > d {
		d = s.upward(ra, rnd)
	}
	return max(d, s.MinInterval)
}

// spread returns d changed by a random fraction in [-Jitter, +Jitter).
func (s Schedule) spread(d time.Duration, rnd *rand.Rand) time.Duration {
	if s.Jitter <= 0 || rnd == nil {
		return d
	}
	f := (rnd.Float64()*2 - 1) * s.Jitter
	return d + time.Duration(f*float64(d))
}

// upward returns d increased by a random fraction in [0, Jitter).
func (s Schedule) upward(d time.Duration, rnd *rand.Rand) time.Duration {
	if s.Jitter <= 0 || rnd == nil {
		return d
	}
	return d + time.Duration(rnd.Float64()*s.Jitter*float64(d))
}
