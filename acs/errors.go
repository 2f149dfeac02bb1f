package acs

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Sentinels for the conditions callers branch on. An [*Error] matches the one
// of its status through errors.Is; client-side validation errors match
// ErrInvalid.
var (
	ErrNotFound     = errors.New("acs: not found")       // 404, 410
	ErrUnauthorized = errors.New("acs: unauthorized")    // 401, or the token endpoint refused the credentials
	ErrForbidden    = errors.New("acs: forbidden")       // 403
	ErrRateLimited  = errors.New("acs: rate limited")    // 429
	ErrConflict     = errors.New("acs: conflict")        // 409
	ErrInvalid      = errors.New("acs: invalid request") // 400, 422, or refused before sending
)

// Error is a non-2xx answer of the service.
type Error struct {
	Method string
	// Route is the path template, such as /v3/story/{id}.
	Route  string
	Status int
	// Message is the server's explanation, or the status text when it gave
	// none.
	Message string
	// Field names the offending field when the server said which.
	Field string
	// RetryAfter is what the Retry-After header asked for, 0 without one.
	RetryAfter time.Duration
}

// Error reads "acs: METHOD route: status: message (field f) (retry after d)".
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "acs: %s %s: %d", e.Method, e.Route, e.Status)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, " (field %s)", e.Field)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %v)", e.RetryAfter)
	}
	return b.String()
}

// Is reports whether target is the sentinel of e's status.
func (e *Error) Is(target error) bool {
	s := statusSentinel(e.Status)
	return s != nil && s == target
}

// statusSentinel maps a status to its sentinel, nil for the others.
func statusSentinel(status int) error {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return ErrInvalid
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusNotFound, http.StatusGone:
		return ErrNotFound
	case http.StatusConflict:
		return ErrConflict
	case http.StatusTooManyRequests:
		return ErrRateLimited
	}
	return nil
}

// ValidationError is a request the client refused to send because it breaks
// a rule of the spec. It matches [ErrInvalid].
type ValidationError struct {
	// Field is the JSON name of the offending field (dotted when nested).
	Field   string
	Message string
}

// Error reads "acs: invalid request: field: message".
func (e *ValidationError) Error() string {
	if e.Field == "" {
		return "acs: invalid request: " + e.Message
	}
	return "acs: invalid request: " + e.Field + ": " + e.Message
}

// Is reports whether target is [ErrInvalid].
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// maxErrorBody caps how much of an error body is read: enough for any
// message, small enough that a misbehaving proxy cannot make us buffer a page.
const maxErrorBody = 64 << 10

// maxMessage caps the message taken from a body that is not JSON.
const maxMessage = 256

// newError builds the error of a non-2xx answer from its (capped) body.
// The body shapes read are those of the wire conventions in
// docs/ARCHITECTURE.md: {"error":{"status","message","field"}}, and the
// common alternatives message, error (string), detail and errors[].
func newError(method, route string, resp *http.Response, body []byte, now time.Time) *Error {
	e := &Error{Method: method, Route: route, Status: resp.StatusCode}
	e.Message, e.Field = errorMessage(body)
	if e.Message == "" {
		e.Message = strings.ToLower(http.StatusText(resp.StatusCode))
	}
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), now)
	return e
}

func errorMessage(body []byte) (msg, field string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
		Field   string          `json:"field"`
		Errors  json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		// Not JSON (a proxy's page, plain text): keep a short, printable
		// prefix so the message stays one line.
		s := strings.Join(strings.Fields(string(body)), " ")
		if len(s) > maxMessage {
			s = s[:maxMessage]
			for !utf8.ValidString(s) {
				s = s[:len(s)-1]
			}
			s += "..."
		}
		return s, ""
	}
	field = v.Field
	if len(v.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
			Field   string `json:"field"`
		}
		var str string
		switch {
		case json.Unmarshal(v.Error, &str) == nil:
			msg = str
		case json.Unmarshal(v.Error, &obj) == nil:
			msg = obj.Message
			if obj.Field != "" {
				field = obj.Field
			}
		}
	}
	if msg == "" {
		msg = v.Message
	}
	if msg == "" {
		msg = v.Detail
	}
	if msg == "" && len(v.Errors) > 0 {
		msg, field = errorsList(v.Errors, field)
	}
	return msg, field
}

// errorsList reads errors[] as strings or {message, field} objects, joining
// their messages; the first named field wins.
func errorsList(raw json.RawMessage, field string) (string, string) {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return "", field
	}
	var msgs []string
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			msgs = append(msgs, s)
			continue
		}
		var obj struct {
			Message string `json:"message"`
			Field   string `json:"field"`
		}
		if json.Unmarshal(it, &obj) == nil {
			msgs = append(msgs, obj.Message)
			if field == "" {
				field = obj.Field
			}
		}
	}
	return strings.Join(msgs, "; "), field
}

// parseRetryAfter reads Retry-After as delay-seconds or an HTTP date; 0 when
// absent or unreadable. A date in the past means "now" and gives 0 as well.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		// Bound the multiplication; nobody means more than a day.
		return time.Duration(min(n, 86400)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
