package acs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"
)

// call3 runs one request of the given method against c.
func call3(ctx context.Context, c *Client, method string) error {
	var err error
	switch method {
	case http.MethodGet:
		_, _, err = c.Content.Get(ctx, 1)
	case http.MethodPut:
		_, _, err = c.Stories.Update(ctx, 1, &StoryUpdate{Title: Ptr("t")})
	case http.MethodDelete:
		_, err = c.Stories.Delete(ctx, 1)
	case http.MethodPost:
		_, _, err = c.Stories.Create(ctx, &StoryCreate{Title: Ptr("t")})
	}
	return err
}

func TestRetryIdempotentMethods(t *testing.T) {
	t.Parallel()
	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		for _, status := range []int{408, 429, 500, 502, 503, 504} {
			t.Run(fmt.Sprintf("%s %d", method, status), func(t *testing.T) {
				t.Parallel()
				rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
					if n == 0 {
						reply(w, status, `{"message":"try again"}`)
						return
					}
					reply(w, 200, oneReply)
				})
				c := newTestClient(t, rec)
				if err := call3(context.Background(), c, method); err != nil {
					t.Fatalf("err = %v, want success on the second attempt", err)
				}
				reqs := rec.requests()
				if len(reqs) != 2 {
					t.Fatalf("server saw %d requests, want 2", len(reqs))
				}
				if reqs[0].Body != reqs[1].Body {
					t.Errorf("retried body %q differs from %q", reqs[1].Body, reqs[0].Body)
				}
			})
		}
	}
}

func TestNoRetryOnClientErrors(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 403, 404, 409, 422} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, status, `{}`) })
			c := newTestClient(t, rec)
			if err := call3(context.Background(), c, http.MethodGet); err == nil {
				t.Fatal("want an error")
			}
			if n := rec.count(); n != 1 {
				t.Errorf("server saw %d requests, want 1", n)
			}
		})
	}
}

// TestRetryBounds: attempts stop at MaxAttempts, waits grow and stay capped.
func TestRetryBounds(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, 503, `{"message":"down"}`) })
	var w waits
	c := newTestClient(t, rec, WithRetryPolicy(RetryPolicy{MaxAttempts: 4, BaseDelay: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond}))
	c.sleep = w.sleep
	err := call3(context.Background(), c, http.MethodGet)
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Status != 503 {
		t.Fatalf("err = %v, want the last *Error 503", err)
	}
	if n := rec.count(); n != 4 {
		t.Errorf("server saw %d requests, want 4", n)
	}
	got := w.all()
	bounds := [][2]time.Duration{{50, 100}, {100, 200}, {150, 300}} // ms: [d/2, d], d doubling, capped at 300
	if len(got) != len(bounds) {
		t.Fatalf("waits = %v, want %d", got, len(bounds))
	}
	for i, b := range bounds {
		if got[i] < b[0]*time.Millisecond || got[i] > b[1]*time.Millisecond {
			t.Errorf("wait %d = %v, want within [%dms, %dms]", i, got[i], b[0], b[1])
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	date := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name      string
		header    string
		status    int
		min, max  time.Duration
		wantRetry bool
		wantAfter time.Duration // RetryAfter on the error when not retried
	}{
		{name: "seconds", header: "2", status: 429, min: 2 * time.Second, max: 2 * time.Second, wantRetry: true},
		{name: "http date", header: date, status: 503, min: time.Second, max: 3 * time.Second, wantRetry: true},
		{name: "beyond max delay", header: "120", status: 429, wantAfter: 120 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n == 0 {
					w.Header().Set("Retry-After", tt.header)
					reply(w, tt.status, `{"message":"slow down"}`)
					return
				}
				reply(w, 200, oneReply)
			})
			var w waits
			c := newTestClient(t, rec, WithRetryPolicy(RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Second}))
			c.sleep = w.sleep
			err := call3(context.Background(), c, http.MethodGet)
			if !tt.wantRetry {
				var apiErr *Error
				if !errors.As(err, &apiErr) || apiErr.RetryAfter != tt.wantAfter || !errors.Is(err, ErrRateLimited) {
					t.Fatalf("err = %v, want ErrRateLimited with RetryAfter %v", err, tt.wantAfter)
				}
				if rec.count() != 1 || len(w.all()) != 0 {
					t.Errorf("%d requests, waits %v; want 1 request and no wait", rec.count(), w.all())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := w.all()
			if len(got) != 1 || got[0] < tt.min || got[0] > tt.max {
				t.Errorf("waits = %v, want one within [%v, %v]", got, tt.min, tt.max)
			}
		})
	}
}

// TestPostNotRetriedAfterReachingServer: a POST that reached the server is
// never sent twice, whatever came back.
func TestPostNotRetriedAfterReachingServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []string{"500", "503", "429", "408", "connection cut"} {
		t.Run(tc, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n > 0 {
					reply(w, 201, oneReply)
					return
				}
				if tc == "connection cut" {
					conn, _, err := w.(http.Hijacker).Hijack()
					if err != nil {
						t.Error(err)
						return
					}
					conn.Close()
					return
				}
				status, _ := strconv.Atoi(tc)
				w.Header().Set("Retry-After", "0")
				reply(w, status, `{}`)
			})
			c := newTestClient(t, rec)
			if err := call3(context.Background(), c, http.MethodPost); err == nil {
				t.Fatal("want the first failure returned")
			}
			if n := rec.count(); n != 1 {
				t.Errorf("server saw %d requests, want 1", n)
			}
		})
	}
}

// TestPostRetriedWhenDialFails: a refused connection proves the POST never
// left, so it is retried.
func TestPostRetriedWhenDialFails(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, 201, oneReply) })
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String()
	closed.Close()
	srvAddr, _ := url.Parse(rec.srv.URL)

	var dials atomic.Int32
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		if dials.Add(1) == 1 {
			return d.DialContext(ctx, network, refused)
		}
		return d.DialContext(ctx, network, srvAddr.Host)
	}}
	defer tr.CloseIdleConnections()
	var attempts []RequestInfo
	c, err := NewClient(rec.srv.URL, StaticToken(testToken).HTTPClient(tr), WithRetryPolicy(fastRetry()),
		WithHook(func(_ context.Context, info RequestInfo) { attempts = append(attempts, info) }))
	if err != nil {
		t.Fatal(err)
	}
	if err := call3(context.Background(), c, http.MethodPost); err != nil {
		t.Fatalf("err = %v, want success after the refused dial", err)
	}
	if len(attempts) != 2 || attempts[0].Status != 0 || attempts[0].Err == nil || attempts[1].Status != 201 {
		t.Errorf("attempts = %+v, want a failed dial then 201", attempts)
	}
	if n := rec.count(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

// TestRetryTransportError: an idempotent request is retried after the
// connection drops.
func TestRetryTransportError(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		reply(w, 200, oneReply)
	})
	c := newTestClient(t, rec)
	if err := call3(context.Background(), c, http.MethodPut); err != nil {
		t.Fatal(err)
	}
	if n := rec.count(); n != 2 {
		t.Errorf("server saw %d requests, want 2", n)
	}
}

func TestContextEnds(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, 503, `{}`) })
	slow := RetryPolicy{MaxAttempts: 5, BaseDelay: 10 * time.Second, MaxDelay: 10 * time.Second}

	t.Run("already canceled", func(t *testing.T) {
		c := newTestClient(t, rec)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		before := rec.count()
		if err := call3(ctx, c, http.MethodGet); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if rec.count() != before {
			t.Error("a request was sent on a canceled context")
		}
	})
	t.Run("canceled during backoff", func(t *testing.T) {
		c := newTestClient(t, rec, WithRetryPolicy(slow))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		err := call3(ctx, c, http.MethodGet)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("returned after %v, want promptly", d)
		}
	})
	t.Run("deadline before the next attempt", func(t *testing.T) {
		c := newTestClient(t, rec, WithRetryPolicy(slow))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		err := call3(ctx, c, http.MethodGet)
		var apiErr *Error
		if !errors.As(err, &apiErr) || apiErr.Status != 503 {
			t.Errorf("err = %v, want the 503 at once rather than a wait into the deadline", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("returned after %v, want at once", d)
		}
	})
	t.Run("deadline during the request", func(t *testing.T) {
		hang := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) { <-r.Context().Done() })
		c := newTestClient(t, hang)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := call3(ctx, c, http.MethodGet); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want context.DeadlineExceeded", err)
		}
	})
}

func TestRateLimiter(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, 200, oneReply) })
	c := newTestClient(t, rec, WithRateLimiter(rate.NewLimiter(rate.Every(time.Hour), 1)))
	if err := call3(context.Background(), c, http.MethodGet); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := call3(ctx, c, http.MethodGet); err == nil {
		t.Fatal("second request within the hour was let through")
	}
	if n := rec.count(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

// TestHook: every attempt is reported with its route template.
func TestHook(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			reply(w, 500, `{}`)
			return
		}
		reply(w, 200, oneReply)
	})
	var got []RequestInfo
	c := newTestClient(t, rec, WithHook(func(_ context.Context, info RequestInfo) { got = append(got, info) }))
	if _, err := c.Segments.RemoveSubscriber(context.Background(), 4, 5); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("reports = %+v, want 2", got)
	}
	for i, info := range got {
		if info.Duration <= 0 {
			t.Errorf("report %d duration %v, want > 0", i, info.Duration)
		}
		got[i].Duration = 0
	}
	var apiErr *Error
	if !errors.As(got[0].Err, &apiErr) || apiErr.Status != 500 {
		t.Errorf("first report error = %v, want the *Error 500", got[0].Err)
	}
	got[0].Err = nil
	route := "/v3/segment/{segment_id}/subscriber/{subscriber_id}"
	want := []RequestInfo{
		{Method: "DELETE", Route: route, Status: 500, Attempt: 1},
		{Method: "DELETE", Route: route, Status: 200, Attempt: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
}
