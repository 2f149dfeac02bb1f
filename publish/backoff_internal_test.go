package publish

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	p := &Publisher{o: Options{BaseBackoff: time.Second, MaxBackoff: time.Hour}}
	tests := []struct {
		attempts int
		ceil     time.Duration // the delay before jitter
	}{
		{0, time.Second},
		{1, 2 * time.Second},
		{5, 32 * time.Second},
		{11, 2048 * time.Second},
		{12, time.Hour}, // 4096s is past the cap
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
