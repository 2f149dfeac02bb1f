package acs

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// TestClientTimeoutBoundsAttempt checks that the http.Client's Timeout
// still bounds each attempt, applied as a deadline on its context, and
// that the caller's client is left as it was.
func TestClientTimeoutBoundsAttempt(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.Method == http.MethodPost {
			<-r.Context().Done() // never answers: only the timeout ends the request
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{"id":5,"description":"News"}}`))
	})
	hc := &http.Client{Timeout: 100 * time.Millisecond}
	c, err := NewClient(rec.srv.URL, hc)
	if err != nil {
		t.Fatal(err)
	}
	if hc.Timeout != 100*time.Millisecond {
		t.Errorf("NewClient changed the caller's http.Client: Timeout %v", hc.Timeout)
	}
	_, _, err = c.Stories.CreateRef(context.Background(), &StoryCreate{Title: Ptr("t"), Body: Ptr("b")})
	var ne interface{ Timeout() bool }
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("POST to a server that never answers = %v; want a timeout", err)
	}
	// An attempt within the timeout is not cut short, the body read included.
	cat, _, err := c.Categories.Get(context.Background(), 5)
	if err != nil || cat.ID != 5 {
		t.Fatalf("GET within the timeout = %+v, %v", cat, err)
	}
}

// TestClientTimeoutBoundsAttemptUnderALaterDeadline: a caller's deadline
// later than the client's timeout does not stand in for it; each attempt
// is still cut at the timeout.
func TestClientTimeoutBoundsAttemptUnderALaterDeadline(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		<-r.Context().Done() // never answers: only a timeout ends the request
	})
	c, err := NewClient(rec.srv.URL, &http.Client{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := c.Stories.CreateRef(ctx, &StoryCreate{Title: Ptr("t"), Body: Ptr("b")})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			t.Fatalf("POST under an hour-long deadline to a server that never answers = %v (caller's context: %v); want the attempt's timeout", err, ctx.Err())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("POST under an hour-long deadline was not cut at the client's 100ms timeout")
	}
}
