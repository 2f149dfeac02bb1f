package feeds

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/feedworker/feedworker/config"
)

// testNow is the injected clock reading: the schedule never reads the time.
var testNow = time.Date(2025, 6, 1, 8, 0, 0, 0, time.UTC)

func testRand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

func dur(d time.Duration) *config.Duration { c := config.Duration(d); return &c }

func TestNewScheduleDefaults(t *testing.T) {
	t.Parallel()
	s := NewSchedule(config.HTTP{})
	if s.MinInterval != time.Minute || s.MaxInterval != 24*time.Hour || s.MaxBackoff != 6*time.Hour ||
		s.DefaultInterval != 15*time.Minute || s.Jitter != 0.1 {
		t.Errorf("defaults = %+v", s)
	}
	s = NewSchedule(config.HTTP{MinInterval: config.Duration(time.Hour), MaxInterval: config.Duration(time.Minute)})
	if s.MaxInterval != time.Hour {
		t.Errorf("a ceiling below the floor must be raised to it: %+v", s)
	}
}

func TestScheduleInterval(t *testing.T) {
	t.Parallel()
	s := NewSchedule(config.HTTP{MinInterval: config.Duration(5 * time.Minute), MaxInterval: config.Duration(2 * time.Hour)})
	tests := []struct {
		own  *config.Duration
		want time.Duration
	}{
		{nil, 15 * time.Minute},
		{dur(30 * time.Minute), 30 * time.Minute},
		{dur(10 * time.Second), 5 * time.Minute},
		{dur(48 * time.Hour), 2 * time.Hour},
		{dur(0), 15 * time.Minute},
	}
	for _, tt := range tests {
		if got := s.Interval(tt.own); got != tt.want {
			t.Errorf("Interval(%v) = %v, want %v", tt.own, got, tt.want)
		}
	}
}

func TestScheduleFirstPollSpread(t *testing.T) {
	t.Parallel()
	s, rnd := NewSchedule(config.HTTP{}), testRand()
	const n = 2000
	for _, interval := range []time.Duration{15 * time.Minute, 2 * time.Second} {
		window := min(interval, StartSpread)
		var quarters [4]int
		for range n {
			at := s.First(testNow, interval, rnd)
			off := at.Sub(testNow)
			if off < 0 || off >= window {
				t.Fatalf("interval %v: first poll at +%v, want within [0, %v)", interval, off, window)
			}
			quarters[off*4/window]++
		}
		for i, q := range quarters {
			if q < n/5 {
				t.Errorf("interval %v: quarter %d of the start window got %d of %d first polls; want them spread evenly (%v)", interval, i, q, n, quarters)
			}
		}
	}
}

func TestScheduleJitterSpread(t *testing.T) {
	t.Parallel()
	s, rnd := NewSchedule(config.HTTP{}), testRand()
	const n, interval = 2000, 15 * time.Minute
	lo, hi := interval*9/10, interval*11/10
	minD, maxD, sum := time.Duration(1<<62), time.Duration(0), time.Duration(0)
	distinct := map[time.Duration]bool{}
	for range n {
		next := s.Next(testNow, interval, Outcome{}, rnd)
		d := next.Sub(testNow)
		if d < lo || d > hi {
			t.Fatalf("delay %v outside ±10%% of %v", d, interval)
		}
		minD, maxD, sum = min(minD, d), max(maxD, d), sum+d
		distinct[d] = true
	}
	if minD > interval*92/100 || maxD < interval*108/100 {
		t.Errorf("delays span only [%v, %v]; want close to [%v, %v]", minD, maxD, lo, hi)
	}
	if mean := sum / n; mean < interval*99/100 || mean > interval*101/100 {
		t.Errorf("mean delay %v, want about %v", mean, interval)
	}
	if len(distinct) < n*9/10 {
		t.Errorf("only %d distinct delays out of %d: feeds would poll in lock-step", len(distinct), n)
	}
}

func TestScheduleBackoff(t *testing.T) {
	t.Parallel()
	s := NewSchedule(config.HTTP{})
	s.Jitter = 0
	want := []time.Duration{15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour, 6 * time.Hour, 6 * time.Hour}
	for i, w := range want {
		if got := s.Delay(15*time.Minute, Outcome{Failures: i + 1}, nil); got != w {
			t.Errorf("failure %d: delay %v, want %v", i+1, got, w)
		}
	}
	// Never gives up, never overflows.
	for _, n := range []int{64, 1000, 1 << 30} {
		if got := s.Delay(15*time.Minute, Outcome{Failures: n}, nil); got != 6*time.Hour {
			t.Errorf("failure %d: delay %v, want the 6h ceiling", n, got)
		}
	}
	// A feed polled less often than the ceiling is not polled more often
	// because it fails.
	if got := s.Delay(12*time.Hour, Outcome{Failures: 3}, nil); got != 12*time.Hour {
		t.Errorf("12h feed failing: delay %v, want 12h", got)
	}

	s.Jitter, s.MaxBackoff = 0.1, 2*time.Hour
	rnd := testRand()
	prev := time.Duration(0)
	for f := 1; f <= 12; f++ {
		d := s.Delay(15*time.Minute, Outcome{Failures: f}, rnd)
		if d > 2*time.Hour {
			t.Errorf("failure %d: jittered delay %v above the 2h ceiling", f, d)
		}
		if f <= 3 && d <= prev {
			t.Errorf("failure %d: delay %v did not grow from %v", f, d, prev)
		}
		prev = d
	}
}

func TestScheduleRetryAfter(t *testing.T) {
	t.Parallel()
	s, rnd := NewSchedule(config.HTTP{}), testRand()
	for range 200 {
		d := s.Delay(15*time.Minute, Outcome{Failures: 1, RetryAfter: 2 * time.Hour}, rnd)
		if d < 2*time.Hour || d > 2*time.Hour*11/10 {
			t.Fatalf("Retry-After 2h: delay %v, want in [2h, 2h12m]", d)
		}
	}
	// A short Retry-After does not shorten the backoff.
	s.Jitter = 0
	if d := s.Delay(15*time.Minute, Outcome{Failures: 4, RetryAfter: time.Second}, nil); d != 2*time.Hour {
		t.Errorf("Retry-After 1s after 4 failures: delay %v, want the 2h backoff", d)
	}
	// An absurd Retry-After is capped, so the feed is still polled.
	if d := s.Delay(15*time.Minute, Outcome{Failures: 1, RetryAfter: 90 * 24 * time.Hour}, nil); d != 24*time.Hour {
		t.Errorf("Retry-After 90d: delay %v, want the 24h cap", d)
	}
}

func TestScheduleHints(t *testing.T) {
	t.Parallel()
	s := NewSchedule(config.HTTP{MaxInterval: config.Duration(6 * time.Hour)})
	const interval = 15 * time.Minute
	tests := []struct {
		name   string
		hint   time.Duration
		lo, hi time.Duration
	}{
		{"ttl 60m makes polling less frequent", time.Hour, time.Hour, time.Hour * 11 / 10},
		{"max-age 2h", 2 * time.Hour, 2 * time.Hour, 2 * time.Hour * 11 / 10},
		{"hint capped at the ceiling", 48 * time.Hour, 6 * time.Hour, 6 * time.Hour},
	}
	for _, tt := range tests {
		rnd := testRand()
		for range 500 {
			d := s.Next(testNow, interval, Outcome{Hint: tt.hint}, rnd).Sub(testNow)
			if d < tt.lo || d > tt.hi {
				t.Fatalf("%s: delay %v, want in [%v, %v]", tt.name, d, tt.lo, tt.hi)
			}
		}
	}
	// A hint shorter than the interval changes nothing: same seed, same delays.
	a, b := testRand(), testRand()
	for range 500 {
		short := s.Delay(interval, Outcome{Hint: time.Minute}, a)
		none := s.Delay(interval, Outcome{}, b)
		if short != none {
			t.Fatalf("hint 1m: delay %v, without hint %v; a hint must never make polling more frequent", short, none)
		}
	}
}

func TestScheduleFloor(t *testing.T) {
	t.Parallel()
	s, rnd := NewSchedule(config.HTTP{MinInterval: config.Duration(10 * time.Minute)}), testRand()
	for range 500 {
		if d := s.Delay(s.Interval(dur(time.Minute)), Outcome{}, rnd); d < 10*time.Minute {
			t.Fatalf("delay %v below the 10m floor", d)
		}
	}
}
