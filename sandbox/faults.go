package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Faults are failures the sandbox injects into /v3 requests, for tests and
// for users rehearsing failure. The zero value injects none. The token
// endpoint and the control endpoint are never faulted, so that a test of
// the API's failure handling is not confounded by token fetches.
//
// Random choices come from one generator seeded with Seed, so a sequence of
// requests sent one at a time meets the same faults on every run.
type Faults struct {
	// Latency is added to every request before it is handled.
	Latency time.Duration
	// ErrorRate is the fraction (0 to 1) of requests answered with one of
	// ErrorCodes without being applied.
	ErrorRate float64
	// ErrorCodes are the 5xx statuses of ErrorRate, picked at random; empty
	// means 500 and 503.
	ErrorCodes []int
	// RateLimit is the number of requests per second above which requests
	// are answered 429 with Retry-After (whole seconds); 0 is no limit.
	RateLimit float64
	// RateBurst is how many requests may arrive at once; 0 is RateLimit
	// rounded up, at least 1.
	RateBurst int
	// CommitThenFail is the fraction (0 to 1) of successful writes (POST,
	// PUT, DELETE) that are applied and then answered 500, as when a
	// connection breaks after the commit; 1 is every write.
	CommitThenFail float64
	// Seed seeds the random choices of ErrorRate, ErrorCodes and
	// CommitThenFail.
	Seed uint64
}

// faultsJSON is the control endpoint's shape of Faults: latency as a Go
// duration string ("250ms").
type faultsJSON struct {
	Latency        string  `json:"latency"`
	ErrorRate      float64 `json:"error_rate"`
	ErrorCodes     []int   `json:"error_codes"`
	RateLimit      float64 `json:"rate_limit"`
	RateBurst      int     `json:"rate_burst"`
	CommitThenFail float64 `json:"commit_then_fail"`
	Seed           uint64  `json:"seed"`
}

// MarshalJSON writes the control endpoint's shape, with the effective
// error codes.
func (f Faults) MarshalJSON() ([]byte, error) {
	return json.Marshal(faultsJSON{
		Latency: f.Latency.String(), ErrorRate: f.ErrorRate, ErrorCodes: f.codes(),
		RateLimit: f.RateLimit, RateBurst: f.RateBurst, CommitThenFail: f.CommitThenFail, Seed: f.Seed,
	})
}

// UnmarshalJSON reads the control endpoint's shape. Unknown keys are
// refused; missing keys are zero, so a document replaces every fault.
func (f *Faults) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var j faultsJSON
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("faults: %w", err)
	}
	var lat time.Duration
	if j.Latency != "" {
		var err error
		if lat, err = time.ParseDuration(j.Latency); err != nil {
			return fmt.Errorf("faults: latency: %w", err)
		}
	}
	*f = Faults{
		Latency: lat, ErrorRate: j.ErrorRate, ErrorCodes: j.ErrorCodes,
		RateLimit: j.RateLimit, RateBurst: j.RateBurst, CommitThenFail: j.CommitThenFail, Seed: j.Seed,
	}
	return nil
}

// Validate reports every value out of range.
func (f Faults) Validate() error {
	var errs []error
	fraction := func(name string, v float64) {
		if !(v >= 0 && v <= 1) { // also refuses NaN
			errs = append(errs, fmt.Errorf("faults: %s %v: must be from 0 to 1", name, v))
		}
	}
	fraction("error rate", f.ErrorRate)
	fraction("commit then fail", f.CommitThenFail)
	if f.Latency < 0 {
		errs = append(errs, fmt.Errorf("faults: latency %v: must not be negative", f.Latency))
	}
	if !(f.RateLimit >= 0) || math.IsInf(f.RateLimit, 0) {
		errs = append(errs, fmt.Errorf("faults: rate limit %v: must be a non-negative number", f.RateLimit))
	}
	if f.RateBurst < 0 {
		errs = append(errs, fmt.Errorf("faults: rate burst %d: must not be negative", f.RateBurst))
	}
	for _, c := range f.ErrorCodes {
		if c < 500 || c > 599 {
			errs = append(errs, fmt.Errorf("faults: error code %d: must be a 5xx status", c))
		}
	}
	return errors.Join(errs...)
}

func (f Faults) codes() []int {
	if len(f.ErrorCodes) == 0 {
		return []int{500, 503}
	}
	return slices.Clone(f.ErrorCodes)
}

func (f Faults) burst() float64 {
	if f.RateBurst > 0 {
		return float64(f.RateBurst)
	}
	return max(1, math.Ceil(f.RateLimit))
}

// faultState holds the configured faults, their random generator and the
// token bucket of the rate limit.
type faultState struct {
	mu     sync.Mutex
	cfg    Faults
	rng    *rand.Rand
	tokens float64   // requests the bucket still allows now
	last   time.Time // when tokens was computed; zero: bucket full
}

func newFaultState(f Faults) *faultState {
	fs := &faultState{}
	fs.set(f)
	return fs
}

// set replaces the faults and restarts the random sequence and the bucket,
// so that a test setting faults gets the same sequence each time.
func (fs *faultState) set(f Faults) {
	f.ErrorCodes = slices.Clone(f.ErrorCodes)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.cfg = f
	fs.rng = rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
	fs.tokens, fs.last = 0, time.Time{}
}

func (fs *faultState) get() Faults {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.cfg
	f.ErrorCodes = slices.Clone(f.ErrorCodes)
	return f
}

// verdict is what the faults decided for one request on arrival.
type verdict struct {
	latency    time.Duration
	retryAfter int // > 0: answer 429 with this Retry-After
	errorCode  int // > 0: answer this status, unapplied
}

func (fs *faultState) decide(now time.Time) verdict {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	v := verdict{latency: fs.cfg.Latency}
	if rate := fs.cfg.RateLimit; rate > 0 {
		burst := fs.cfg.burst()
		if fs.last.IsZero() {
			fs.tokens = burst
		} else if d := now.Sub(fs.last); d > 0 {
			fs.tokens = min(burst, fs.tokens+d.Seconds()*rate)
		}
		fs.last = now
		if fs.tokens < 1 {
			v.retryAfter = max(1, int(math.Ceil((1-fs.tokens)/rate)))
			return v
		}
		fs.tokens--
	}
	if fs.cfg.ErrorRate > 0 && fs.rng.Float64() < fs.cfg.ErrorRate {
		codes := fs.cfg.codes()
		v.errorCode = codes[fs.rng.IntN(len(codes))]
	}
	return v
}

// commitFails decides, after a write succeeded, whether to answer 500.
func (fs *faultState) commitFails() bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	r := fs.cfg.CommitThenFail
	return r >= 1 || (r > 0 && fs.rng.Float64() < r)
}
