package publish_test

import (
	"context"
	"testing"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
)

// oneAttemptClient makes the env's publisher use a client that makes one
// attempt per call, as the worker's does: the publisher is then the only
// place anything is retried.
func oneAttemptClient(t *testing.T, e *env) {
	t.Helper()
	creds := acs.ClientCredentials{TokenURL: acs.TokenURL(e.srv.URL), ClientID: sandbox.DefaultClientID, ClientSecret: sandbox.DefaultClientSecret}
	c, err := acs.NewClient(e.srv.URL, creds.HTTPClient(nil), acs.WithRetryPolicy(acs.RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	e.acs, e.api = c, publish.NewACS(c)
}

// TestDrainRidesOutRandomErrors: with a fifth of the requests failing at
// random (500 and 503 without Retry-After, unapplied), one drain delivers
// every item exactly once and leaves nothing queued, without the circuit
// ever opening.
func TestDrainRidesOutRandomErrors(t *testing.T) {
	for _, kind := range []storeKind{onRedis, onBolt} {
		t.Run(kind.String(), func(t *testing.T) {
			e := newEnv(t, kind, sandbox.Faults{})
			oneAttemptClient(t, e)
			// The default backoff: first retries within a second.
			p := e.publisher(func(o *publish.Options) { o.BaseBackoff, o.MaxBackoff = 0, 0 })
			items := stories("flaky", 200)
			e.accept(p, "flaky", items, publish.FeedOptions{InitialItems: len(items)})
			// Faults from here on: the look-up of a feed new to the store
			// (reconcile mode) happens in Accept, before anything is queued.
			if err := e.sb.SetFaults(sandbox.Faults{ErrorRate: 0.2, Seed: 7}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := p.Drain(ctx); err != nil {
				t.Fatalf("Drain: %v", err)
			}
			st, err := p.Stats(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if st.Outbox != 0 || st.DeadLetters != 0 {
				t.Errorf("after one drain: outbox %d, dead letters %d; want both 0", st.Outbox, st.DeadLetters)
			}
			e.exactlyOnce(items)
			if g := p.GateState(); g.Opens != 0 {
				t.Errorf("circuit opened %d times at a 20%% error rate; want never", g.Opens)
			}
		})
	}
}

// TestOutageThenRecovery: while every request fails the circuit opens
// (items wait without spending attempts); once the service is healthy
// again every item is delivered exactly once.
func TestOutageThenRecovery(t *testing.T) {
	e := newEnv(t, onRedis, sandbox.Faults{})
	oneAttemptClient(t, e)
	p := e.publisher(func(o *publish.Options) { o.BaseBackoff, o.MaxBackoff = 0, 0 })
	items := stories("outage", 40)
	e.accept(p, "outage", items, publish.FeedOptions{InitialItems: len(items)})
	// Every request fails from here on; the look-up of a feed new to the
	// store (reconcile mode) happened in Accept.
	if err := e.sb.SetFaults(sandbox.Faults{ErrorRate: 1}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitFor(t, time.Minute, "the circuit to open", func() bool { return p.GateState().State != "closed" })
	if err := e.sb.SetFaults(sandbox.Faults{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the outbox to empty", func() bool {
		st, err := p.Stats(context.Background())
		return err == nil && st.Outbox == 0
	})
	e.exactlyOnce(items)
	if g := p.GateState(); g.State != "closed" {
		t.Errorf("circuit %s after recovery; want closed", g.State)
	}
}

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDrainRidesOutAnOutage: a drain that meets a service failing as a
// whole waits for it (a short outage), and ends with everything
// delivered once the service is back.
func TestDrainRidesOutAnOutage(t *testing.T) {
	e := newEnv(t, onRedis, sandbox.Faults{})
	oneAttemptClient(t, e)
	p := e.publisher(func(o *publish.Options) { o.BaseBackoff, o.MaxBackoff = 0, 0 })
	items := stories("drain-outage", 20)
	e.accept(p, "drain-outage", items, publish.FeedOptions{InitialItems: len(items)})
	// Every request fails from here on; the look-up of a feed new to the
	// store (reconcile mode) happened in Accept.
	if err := e.sb.SetFaults(sandbox.Faults{ErrorRate: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Drain(ctx) }()
	waitFor(t, time.Minute, "the circuit to open", func() bool { return p.GateState().State != "closed" })
	if err := e.sb.SetFaults(sandbox.Faults{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Drain: %v", err)
	}
	st, err := p.Stats(context.Background())
	if err != nil || st.Outbox != 0 {
		t.Fatalf("after the drain: %+v, %v; want the outbox empty", st, err)
	}
	e.exactlyOnce(items)
}
