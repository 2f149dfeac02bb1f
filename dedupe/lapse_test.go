package dedupe_test

import (
	"context"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// lapseWitness takes a lease of ttl on s now and returns a wait for its
// expiry. Claims and leases expire on the same clock (the Redis server's,
// or the process's for bolt), so whatever was given ttl before the call
// has lapsed once the wait returns. Tests wait for that condition, polled
// with a generous deadline, instead of sleeping a guess of it.
func lapseWitness(t *testing.T, s dedupe.Store, ttl time.Duration) (wait func()) {
	t.Helper()
	const name = "test-lapse-witness"
	ctx := context.Background()
	if ok, err := s.AcquireLease(ctx, name, "witness", ttl); err != nil || !ok {
		t.Fatalf("witness lease: %v, %v; want taken", ok, err)
	}
	return func() {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			// Taken by another owner only once the witness's ttl ran out;
			// the probe's own lease is given back at once.
			ok, err := s.AcquireLease(ctx, name, "probe", time.Minute)
			if err != nil {
				t.Fatalf("probe the witness lease: %v", err)
			}
			if ok {
				if err := s.ReleaseLease(ctx, name, "probe"); err != nil {
					t.Fatal(err)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("a lease of %v did not expire within 30s", ttl)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
