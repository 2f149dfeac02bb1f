package acs

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestErrorClasses: each status maps to its sentinel and no other.
func TestErrorClasses(t *testing.T) {
	t.Parallel()
	sentinels := []error{ErrNotFound, ErrUnauthorized, ErrForbidden, ErrRateLimited, ErrConflict, ErrInvalid}
	tests := []struct {
		status int
		want   error // nil: matches no sentinel
	}{
		{400, ErrInvalid},
		{401, ErrUnauthorized},
		{403, ErrForbidden},
		{404, ErrNotFound},
		{409, ErrConflict},
		{410, ErrNotFound},
		{422, ErrInvalid},
		{429, ErrRateLimited},
		{418, nil},
		{500, nil},
		{503, nil},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			t.Parallel()
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
				reply(w, tt.status, `{"error":{"status":1,"message":"nope","field":"title"}}`)
			})
			c := newTestClient(t, rec, WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
			_, _, err := c.Stories.Update(context.Background(), 12, &StoryUpdate{Title: Ptr("x")})
			var apiErr *Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			want := &Error{Method: "PUT", Route: "/v3/story/{id}", Status: tt.status, Message: "nope", Field: "title"}
			if *apiErr != *want {
				t.Errorf("error = %+v, want %+v", apiErr, want)
			}
			for _, s := range sentinels {
				if got := errors.Is(err, s); got != (s == tt.want) {
					t.Errorf("errors.Is(err, %v) = %v", s, got)
				}
			}
		})
	}
}

// TestErrorBodies: the message and field are read from each body shape.
func TestErrorBodies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, msg, field string
	}{
		{"sandbox shape", `{"error":{"status":400,"message":"title is required","field":"title"}}`, "title is required", "title"},
		{"message", `{"message":"bad page_size","field":"page_size"}`, "bad page_size", "page_size"},
		{"error string", `{"error":"invalid_request"}`, "invalid_request", ""},
		{"detail", `{"title":"Bad Request","detail":"email is malformed"}`, "email is malformed", ""},
		{"errors objects", `{"errors":[{"message":"a","field":"x"},{"message":"b","field":"y"}]}`, "a; b", "x"},
		{"errors strings", `{"errors":["a","b"]}`, "a; b", ""},
		{"plain text", "upstream\n  timed out", "upstream timed out", ""},
		{"empty", ``, "bad request", ""},
		{"huge", strings.Repeat("x", 1<<20), strings.Repeat("x", maxMessage) + "...", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, 400, tt.body) })
			c := newTestClient(t, rec)
			_, _, err := c.Categories.Create(context.Background(), &CategoryCreate{Description: "x"})
			var apiErr *Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if apiErr.Message != tt.msg || apiErr.Field != tt.field {
				t.Errorf("message, field = %q, %q; want %q, %q", apiErr.Message, apiErr.Field, tt.msg, tt.field)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	t.Parallel()
	e := &Error{Method: "POST", Route: "/v3/story", Status: 429, Message: "slow down", Field: "title", RetryAfter: 2 * time.Second}
	if got, want := e.Error(), "acs: POST /v3/story: 429: slow down (field title) (retry after 2s)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	v := &ValidationError{Field: "email", Message: "required on create"}
	if got, want := v.Error(), "acs: invalid request: email: required on create"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		" 10 ":                          10 * time.Second,
		"-1":                            0,
		"soon":                          0,
		"Sun, 01 Mar 2026 12:00:30 GMT": 30 * time.Second,
		"Sun, 01 Mar 2026 11:00:00 GMT": 0,
		"99999999999":                   24 * time.Hour,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestNonDecodableSuccess: a 2xx body that is not JSON is an error, not a
// silent empty result.
func TestNonDecodableSuccess(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, 200, `<html>`) })
	c := newTestClient(t, rec)
	got, resp, err := c.Content.Get(context.Background(), 1)
	if err == nil || got != nil {
		t.Fatalf("got %v, %v; want an error", got, err)
	}
	if resp == nil || resp.StatusCode != 200 {
		t.Errorf("response = %v, want the 200 for inspection", resp)
	}
}
