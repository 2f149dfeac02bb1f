package feeds

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"time"
)

// ErrGone is returned for an HTTP 410: the publisher says the feed will never
// come back, so the poller stops polling it until its configuration changes.
var ErrGone = errors.New("feed is gone (http 410)")

// ErrTooLarge is returned when the body, on the wire or decompressed, is larger
// than the configured maximum body size.
var ErrTooLarge = errors.New("feed body exceeds the maximum size")

// ErrTooManyRedirects is returned when a fetch is redirected more often than
// the configured maximum.
var ErrTooManyRedirects = errors.New("too many redirects")

// ErrRedirectLoop is returned when a redirect leads back to a URL already
// visited during the same fetch.
var ErrRedirectLoop = errors.New("redirect loop")

// StatusError is a non-2xx answer that is neither 304, 410 nor rate limiting.
type StatusError struct {
	StatusCode int
	// Status is the status line text, such as "500 Internal Server Error".
	Status string
}

func (e *StatusError) Error() string {
	if e.Status != "" {
		return "http status " + e.Status
	}
	return fmt.Sprintf("http status %d", e.StatusCode)
}

// RetryAfterError is a 429, or a 503 that carries Retry-After: the server asked
// us to come back later. RetryAfter is zero when the header was absent or
// unreadable, in which case the normal failure backoff applies.
type RetryAfterError struct {
	StatusCode int
	RetryAfter time.Duration
}

func (e *RetryAfterError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("http status %d: retry after %s", e.StatusCode, e.RetryAfter)
	}
	return fmt.Sprintf("http status %d: rate limited", e.StatusCode)
}

// ParseError is a body that was fetched in full but is not a feed gofeed can
// read (HTML, a truncated document, an unknown root element...).
type ParseError struct {
	Err error
}

func (e *ParseError) Error() string { return "parse feed: " + e.Err.Error() }

// Unwrap returns the parser's own error.
func (e *ParseError) Unwrap() error { return e.Err }

// FileError is a file: feed that cannot be read: missing, unreadable, or
// not a regular file. It is classed error_file: no network is involved.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string {
	if errors.Is(e.Err, fs.ErrNotExist) {
		return "file not found: " + e.Path
	}
	return "read feed file " + e.Path + ": " + e.Err.Error()
}

// Unwrap returns the cause (fs.ErrNotExist when the file is missing).
func (e *FileError) Unwrap() error { return e.Err }

// HandlerError wraps an error returned by the Handler (loading validators or
// handing the items over). It is classed error_store: the fetch itself worked.
type HandlerError struct {
	Err error
}

func (e *HandlerError) Error() string { return "handler: " + e.Err.Error() }

// Unwrap returns the handler's error.
func (e *HandlerError) Unwrap() error { return e.Err }

// Result classes: the values of the result label of the poll metrics. The set
// is closed so the label cardinality stays bounded.
const (
	ClassOK          = "ok"
	ClassNotModified = "not_modified"
	// ClassPartial is a 200 whose document ended early: the items complete
	// before the cut were handled, the validators were not kept.
	ClassPartial     = "partial"
	ClassGone        = "gone"
	ClassRateLimited = "rate_limited"
	ClassHTTP        = "error_http"
	ClassTimeout     = "error_timeout"
	ClassNetwork     = "error_network"
	ClassFile        = "error_file"
	ClassParse       = "error_parse"
	ClassTooLarge    = "error_too_large"
	ClassStore       = "error_store"
)

// Class maps an error returned by Fetch, Parse or the poller to one of the
// bounded result classes above. A nil error is ClassOK (the caller knows
// whether the result was a 304 and uses ClassNotModified then). Anything not
// recognised is a network problem: DNS, refused connections, TLS, resets,
// corrupt transfer encodings all end up there.
func Class(err error) string {
	var (
		retry   *RetryAfterError
		status  *StatusError
		parse   *ParseError
		handler *HandlerError
		file    *FileError
		netErr  net.Error
	)
	switch {
	case err == nil:
		return ClassOK
	case errors.As(err, &handler):
		return ClassStore
	case errors.As(err, &file):
		return ClassFile
	case errors.Is(err, ErrGone):
		return ClassGone
	case errors.As(err, &retry):
		return ClassRateLimited
	case errors.Is(err, ErrTooLarge):
		return ClassTooLarge
	case errors.As(err, &parse):
		return ClassParse
	case errors.As(err, &status), errors.Is(err, ErrTooManyRedirects), errors.Is(err, ErrRedirectLoop):
		return ClassHTTP
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, os.ErrDeadlineExceeded):
		return ClassTimeout
	case errors.As(err, &netErr) && netErr.Timeout():
		return ClassTimeout
	default:
		return ClassNetwork
	}
}
