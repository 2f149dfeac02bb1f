package publish

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/dedupe"
)

// TestBackoff: an item's wait grows by half per failed attempt, with
// jitter over its upper half, up to MaxBackoff.
func TestBackoff(t *testing.T) {
	p := &Publisher{o: Options{BaseBackoff: time.Second, MaxBackoff: time.Hour}}
	tests := []struct {
		attempts int
		ceil     time.Duration // the delay before jitter
	}{
		{0, time.Second},
		{1, 1500 * time.Millisecond},
		{2, 2250 * time.Millisecond},
		{5, 7593750 * time.Microsecond},
		{21, time.Hour}, // 1.5^21 s is past the cap
		{1000, time.Hour},
	}
	for _, tc := range tests {
		for range 50 {
			got := p.backoff(tc.attempts)
			if got < tc.ceil/2 || got > tc.ceil {
				t.Fatalf("backoff(%d) = %v; want within [%v, %v]", tc.attempts, got, tc.ceil/2, tc.ceil)
			}
		}
	}
	// Jitter: fifty draws are not all equal.
	seen := map[time.Duration]bool{}
	for range 50 {
		seen[p.backoff(3)] = true
	}
	if len(seen) < 2 {
		t.Errorf("backoff(3) drew %d distinct values in 50; want jitter", len(seen))
	}
}

// TestRetryAfterGateCapped: a Retry-After holds the whole process back for
// at most max(MaxBackoff, a minute), so a wrong or hostile answer cannot
// stop delivery for a day, while an ordinary rate limit is honoured in
// full even when items back off for less.
func TestRetryAfterGateCapped(t *testing.T) {
	store, err := dedupe.OpenBolt(filepath.Join(t.TempDir(), "s.db"), dedupe.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tests := []struct {
		maxBackoff, retryAfter, want time.Duration
	}{
		{time.Hour, 24 * time.Hour, time.Hour},
		{200 * time.Millisecond, 24 * time.Hour, time.Minute},
		{200 * time.Millisecond, 3 * time.Second, 3 * time.Second},
	}
	for _, tc := range tests {
		p, err := New(Options{Store: store, API: NewACS(nil), MaxBackoff: tc.maxBackoff})
		if err != nil {
			t.Fatal(err)
		}
		_ = p.api.(gated).after(false, &acs.Error{Status: http.StatusTooManyRequests, RetryAfter: tc.retryAfter})
		p.gate.mu.Lock()
		got := time.Until(p.gate.until)
		p.gate.mu.Unlock()
		if got > tc.want || got < tc.want-time.Second {
			t.Errorf("MaxBackoff %v, Retry-After %v: gate closed for %v; want %v", tc.maxBackoff, tc.retryAfter, got, tc.want)
		}
	}
}
