package dedupe_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
)

// TestRateBudgetShared: two workers on one Redis share one budget: what
// one took, the other waits for.
func TestRateBudgetShared(t *testing.T) {
	c, prefix := dedupetest.Redis(t)
	testRateBudgetShared(t, c, prefix)
}

// TestClusterRateBudget: the budget is one key, legal on Redis Cluster.
func TestClusterRateBudget(t *testing.T) {
	c, prefix := dedupetest.Cluster(t)
	testRateBudgetShared(t, c, prefix)
}

func testRateBudgetShared(t *testing.T, c redis.UniversalClient, prefix string) {
	a := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix}).RateBudget()
	b := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix}).RateBudget()
	other := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix + "other:"}).RateBudget()
	ctx := context.Background()
	// One request per 100 seconds, burst 1: the second asker must wait
	// however slow the machine is.
	const rate = 0.01
	if d, err := a.Take(ctx, rate, 1); err != nil || d != 0 {
		t.Fatalf("first take: wait %v, %v; want to go at once", d, err)
	}
	d, err := b.Take(ctx, rate, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d < 50*time.Second {
		t.Errorf("second worker's take: wait %v; want about 100s (the budget is shared)", d)
	}
	if d, err := other.Take(ctx, rate, 1); err != nil || d != 0 {
		t.Errorf("another prefix's take: wait %v, %v; want its own budget", d, err)
	}
	if _, err := a.Take(ctx, 0, 1); err == nil {
		t.Error("a zero rate was accepted")
	}
}

// TestRateBudgetPacesClient: a client paced through the shared budget
// sends through it, and falls back to pacing itself when Redis is gone.
func TestRateBudgetPacesClient(t *testing.T) {
	c, prefix := dedupetest.Redis(t)
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"collection":{"items":[{"data":{"id":1,"title":"t","type":"story"}}]}}`))
	}))
	defer srv.Close()

	var budgetErrs atomic.Int64
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer dead.Close()
	for _, tc := range []struct {
		name   string
		budget *dedupe.RateBudget
		errs   int64
	}{
		{"shared", dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix}).RateBudget(), 0},
		{"redis down", dedupe.NewRedis(dead, dedupe.RedisOptions{Prefix: prefix}).RateBudget(), 3},
	} {
		budgetErrs.Store(0)
		p, err := acs.NewAdaptiveRate(acs.AdaptiveOptions{Ceiling: 1000, Budget: tc.budget, OnBudgetError: func(error) { budgetErrs.Add(1) }})
		if err != nil {
			t.Fatal(err)
		}
		cl, err := acs.NewClient(srv.URL, nil, acs.WithAdaptiveRate(p))
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, _, err := cl.Content.Get(context.Background(), 1); err != nil && !errors.Is(err, acs.ErrNotFound) {
				t.Fatalf("%s: GET: %v", tc.name, err)
			}
		}
		if got := budgetErrs.Load(); got != tc.errs {
			t.Errorf("%s: %d budget errors reported; want %d", tc.name, got, tc.errs)
		}
	}
	if served.Load() != 6 {
		t.Errorf("server saw %d requests; want 6", served.Load())
	}
}
