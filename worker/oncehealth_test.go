package worker

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestOnceProbesADownStore: a store marked down during `once` (a settle
// past its timeout behind a long commit does it) is found back by the
// health's probe, as in `run`. Nothing else marks it up, and every sender
// and poll waits for it: without the probe the pass never ended.
func TestOnceProbesADownStore(t *testing.T) {
	e := newEnv(t, 2, 3)
	var (
		w    *Worker
		once sync.Once
		up   = make(chan bool, 1)
	)
	front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			w.health.markDown(errors.New("injected: the store did not answer"))
			deadline := time.Now().Add(30 * time.Second)
			for !w.health.Up() && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			up <- w.health.Up()
		})
		e.farm.ServeHTTP(rw, r)
	}))
	t.Cleanup(front.Close)
	e.farmURL = front.URL
	w = newWorker(t, e.config(t, testSecret, ""), Options{})

	s, err := w.Once(t.Context())
	if err != nil {
		t.Fatalf("Once: %v", err)
	}
	if !<-up {
		t.Fatal("the store marked down during once was never found back within 30 s")
	}
	if s.PublishedTotal() != 6 {
		t.Errorf("published %d items, want 6", s.PublishedTotal())
	}
}
