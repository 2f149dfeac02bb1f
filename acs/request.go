package acs

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// maxBody caps a success body. The largest answer the spec implies is a page
// of 500 Content items; 32 MiB leaves room without letting a broken server
// exhaust memory.
const maxBody = 32 << 20

// request is one call, built once and sent once per attempt.
type request struct {
	method string
	route  string // path template, as reported in errors and to the hook
	path   string // route with its parameters in, as URL.Path takes it
	// rawPath is path escaped with each parameter as one segment, set
	// when a string parameter holds a character PathEscape escapes, so
	// that a "/" in it stays inside its segment; "" otherwise.
	rawPath string
	query   url.Values
	body    []byte // nil: no body
}

// envelope is the shape of every POST and PUT body (spec 2.1).
type envelope struct {
	Template envelopeTemplate `json:"template"`
}

type envelopeTemplate struct {
	Version string `json:"version"`
	Data    []any  `json:"data"`
}

// validator is implemented by request types with rules beyond their shape.
type validator interface {
	validate() error
}

// escapePath escapes s as URL.Path's own encoding does.
func escapePath(s string) string { return (&url.URL{Path: s}).EscapedPath() }

// newRequest is the one request builder. It expands route's {placeholders}
// in order with params (int64 ids, which must be positive, or strings),
// path-escaping each, and wraps a non-nil body in the envelope after
// validating it. Every error matches ErrInvalid: nothing has been sent.
func (c *Client) newRequest(method, route string, query url.Values, body any, params ...any) (*request, error) {
	var path, raw strings.Builder
	rest := route
	escapes := false // a parameter that its own escaping changes
	for _, p := range params {
		open := strings.IndexByte(rest, '{')
		end := strings.IndexByte(rest, '}')
		if open < 0 || end < open {
			return nil, fmt.Errorf("acs: route %s: more parameters than placeholders", route)
		}
		name := rest[open+1 : end]
		var seg string
		switch v := p.(type) {
		case int64:
			if v <= 0 {
				return nil, invalid(name, "%d is not a positive id", v)
			}
			seg = strconv.FormatInt(v, 10)
		case string:
			if v == "" || v == "." || v == ".." {
				// A dot segment would be resolved away on its way.
				return nil, invalid(name, "%q is not a path segment", v)
			}
			seg = v
			escapes = escapes || url.PathEscape(v) != v
		default:
			return nil, fmt.Errorf("acs: route %s: parameter %s of type %T", route, name, p)
		}
		path.WriteString(rest[:open])
		path.WriteString(seg)
		rest = rest[end+1:]
	}
	if strings.ContainsRune(rest, '{') {
		return nil, fmt.Errorf("acs: route %s: fewer parameters than placeholders", route)
	}
	r := &request{method: method, route: route, path: route, query: query}
	if len(params) > 0 {
		// Without parameters (a create) the path is the route, not a copy.
		path.WriteString(rest)
		r.path = path.String()
	}
	if escapes {
		// The route's own text escaped as URL.Path would be, and each
		// parameter as one segment ("a/b" is "a%2Fb"): URL.Path alone
		// would send a "/" in a parameter as a separator. A second pass
		// over the route the first one checked, so that the common
		// requests (ids only) build one path, not two.
		rest = route
		for _, p := range params {
			open, end := strings.IndexByte(rest, '{'), strings.IndexByte(rest, '}')
			raw.WriteString(escapePath(rest[:open]))
			switch v := p.(type) {
			case int64:
				raw.WriteString(strconv.FormatInt(v, 10))
			case string:
				raw.WriteString(url.PathEscape(v))
			}
			rest = rest[end+1:]
		}
		raw.WriteString(escapePath(rest))
		r.rawPath = raw.String()
	}
	if body != nil && !isNilPointer(body) {
		if v, ok := body.(validator); ok {
			if err := v.validate(); err != nil {
				return nil, err
			}
		}
		ba, byHand := body.(bodyAppender)
		var err error
		if byHand {
			err = ba.checkTimestamps()
		} else {
			err = validateTimestamps(body)
		}
		if err != nil {
			return nil, err
		}
		// Encoded into a reused buffer and copied out at its size: the
		// buffer's growth by doubling, per request, was most of the bytes
		// a request allocated.
		buf := c.bodyBuffer()
		if byHand {
			// Written into the buffer's spare room; a buffer this outgrew
			// is kept in its place.
			b := appendEnvelope(buf.AvailableBuffer(), ba)
			r.body = bytes.Clone(b)
			if cap(b) > buf.Cap() {
				buf = bytes.NewBuffer(b[:0])
			}
			c.putBodyBuffer(buf)
			return r, nil
		}
		err = encode(buf, envelope{Template: envelopeTemplate{Version: APIVersion, Data: []any{body}}})
		if err == nil {
			r.body = bytes.Clone(buf.Bytes())
		}
		c.putBodyBuffer(buf)
		if err != nil {
			return nil, fmt.Errorf("acs: %s %s: encode body: %w", method, route, err)
		}
	}
	return r, nil
}

// marshal is json.Marshal without HTML escaping: bodies carry HTML, and
// "\u003cp\u003e" for "<p>" only bloats them and confuses whoever reads a
// capture.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := encode(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// encode appends marshal's encoding of v to b.
func encode(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	return nil
}

func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// do is the one place requests are sent. It makes up to MaxAttempts
// attempts, decodes a 2xx body into v (when v is non-nil) and reports
// whether the body held anything.
func (c *Client) do(ctx context.Context, r *request, v any) (*Response, bool, error) {
	for attempt := 1; ; attempt++ {
		if c.limiter != nil {
			if err := c.limiter.Wait(ctx); err != nil {
				if cerr := ctxErr(ctx, r.method, r.route); cerr != nil {
					return nil, false, cerr
				}
				// The limiter refuses up front when the deadline is too close.
				return nil, false, fmt.Errorf("acs: %s %s: rate limit: %w", r.method, r.route, err)
			}
		}
		if c.pacer != nil {
			if err := c.pacer.Wait(ctx); err != nil {
				if cerr := ctxErr(ctx, r.method, r.route); cerr != nil {
					return nil, false, cerr
				}
				return nil, false, fmt.Errorf("acs: %s %s: rate limit: %w", r.method, r.route, err)
			}
		}
		sent := time.Now()
		resp, buf, err := c.attempt(ctx, r, attempt)
		if c.pacer != nil {
			st, h, ra := answerOf(resp, err)
			c.pacer.observe(sent, st, h, ra)
		}
		if err == nil {
			if v == nil {
				c.putBodyBuffer(buf)
				return resp, false, nil
			}
			found, meta, err := decode(buf.Bytes(), v)
			c.putBodyBuffer(buf)
			if err != nil {
				return resp, false, &DecodeError{Method: r.method, Route: r.route, Status: resp.StatusCode, Field: fieldOf(err), Err: err}
			}
			resp.Page, resp.PageSize, resp.Total = meta.Page, meta.PageSize, meta.Total
			return resp, found, nil
		}
		if cerr := ctxErr(ctx, r.method, r.route); cerr != nil {
			return resp, false, cerr
		}
		wait, ok := c.retryWait(r.method, err, attempt)
		if !ok {
			return resp, false, err
		}
		if dl, has := ctx.Deadline(); has && time.Until(dl) < wait {
			// The context would end mid-wait: the last answer says more
			// than a deadline error would.
			return resp, false, err
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			if cerr := ctxErr(ctx, r.method, r.route); cerr != nil {
				return resp, false, cerr
			}
			return resp, false, fmt.Errorf("acs: %s %s: wait to retry: %w", r.method, r.route, serr)
		}
	}
}

// answerOf is what the pacer learns from an attempt: the status (0 with
// no answer), the headers and the Retry-After.
func answerOf(resp *Response, err error) (int, http.Header, time.Duration) {
	if resp == nil || resp.Response == nil {
		return 0, nil, 0
	}
	var ra time.Duration
	if err != nil {
		// Declared here, it is not put on the heap for every answer.
		var apiErr *Error
		if errors.As(err, &apiErr) {
			ra = apiErr.RetryAfter
		}
	}
	return resp.StatusCode, resp.Header, ra
}

// errTransport marks a failure with no HTTP answer (or an unreadable one),
// as opposed to an *Error.
type errTransport struct{ err error }

func (e *errTransport) Error() string { return e.err.Error() }
func (e *errTransport) Unwrap() error { return e.err }

// attempt sends r once and reads the body. A non-2xx answer is returned as
// *Error, a failure without an answer wrapped in *errTransport. A 2xx body
// comes in a buffer of bodyBuffer's, for the caller to give back.
func (c *Client) attempt(ctx context.Context, r *request, n int) (*Response, *bytes.Buffer, error) {
	if c.timeout > 0 {
		// A deadline of the caller's as early already bounds the attempt:
		// another context, and its timer, would change nothing.
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > c.timeout {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.timeout)
			defer cancel()
		}
	}
	var rd io.Reader
	if r.body != nil {
		rd = bytes.NewReader(r.body) // also sets GetBody, so auth can replay it
	}
	// The URL is filled in as a struct, not written out as a string for
	// NewRequest to parse back: the request line is the same (it is the
	// URL's escaped path and query either way), without the parse.
	req, err := http.NewRequestWithContext(ctx, r.method, "", rd)
	if err != nil {
		return nil, nil, fmt.Errorf("acs: %s %s: %w", r.method, r.route, err)
	}
	*req.URL = url.URL{
		Scheme: c.baseURL.Scheme,
		Host:   c.baseURL.Host,
		Path:   c.baseURL.Path + r.path,
		// Spaces as %20, not form encoding's "+": a timestamp in
		// filters_json holds a space, and a server reading the query by
		// RFC 3986 would take "+" literally. A literal "+" is already
		// escaped as %2B by Encode.
		RawQuery: strings.ReplaceAll(r.query.Encode(), "+", "%20"),
	}
	if r.rawPath != "" || c.baseURL.RawPath != "" {
		raw := r.rawPath
		if raw == "" {
			raw = escapePath(r.path)
		}
		req.URL.RawPath = c.baseURL.EscapedPath() + raw
	}
	// No Host of its own (NewRequest with no URL leaves it empty): the
	// Host header is then the URL's host, the same, and http.Client does
	// not copy the URL to put the Host in it.
	// The values are the client's own, shared by its requests, which
	// nothing changes (a RoundTripper must not modify a request); the
	// keys are in canonical form, as Set would write them.
	req.Header["Accept"] = c.headers.accept
	req.Header["User-Agent"] = c.headers.userAgent
	if r.body != nil {
		req.Header["Content-Type"] = c.headers.json
	}

	start := time.Now()
	report := func(status int, err error) {
		if c.hook != nil {
			c.hook(ctx, RequestInfo{Method: r.method, Route: r.route, Status: status, Duration: time.Since(start), Attempt: n, Err: err})
		}
	}
	hr, err := c.http.Do(req)
	if err != nil {
		err = &errTransport{fmt.Errorf("acs: %s %s: %w", r.method, r.route, err)}
		report(0, err)
		return nil, nil, err
	}
	defer hr.Body.Close()
	resp := &Response{Response: hr}

	if hr.StatusCode < 200 || hr.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(hr.Body, maxErrorBody))
		// Drain a little more so the connection can be reused; give up on
		// anything bigger rather than reading it.
		_, _ = io.CopyN(io.Discard, hr.Body, maxErrorBody)
		apiErr := newError(r.method, r.route, hr, body, time.Now())
		report(hr.StatusCode, apiErr)
		return resp, nil, apiErr
	}
	buf := c.bodyBuffer()
	if _, err := buf.ReadFrom(io.LimitReader(hr.Body, maxBody+1)); err != nil {
		c.putBodyBuffer(buf)
		err = &errTransport{fmt.Errorf("acs: %s %s: read body: %w", r.method, r.route, err)}
		report(hr.StatusCode, err)
		return resp, nil, err
	}
	if buf.Len() > maxBody {
		c.putBodyBuffer(buf)
		err := fmt.Errorf("acs: %s %s: response body exceeds %d bytes", r.method, r.route, maxBody)
		report(hr.StatusCode, err)
		return resp, nil, err
	}
	report(hr.StatusCode, nil)
	return resp, buf, nil
}

// maxPooledBody is the largest body buffer kept for the next answer: a
// list page can be megabytes, and one such answer must not pin as much.
const maxPooledBody = 256 << 10

// bodyBuffer returns an empty buffer for an answer's body (or a request
// body's encoding), one a previous use has left when there is one: a
// worker reads thousands of small answers, and reading each into fresh
// memory (grown by doubling) was a large share of its allocation.
func (c *Client) bodyBuffer() *bytes.Buffer {
	if b, ok := c.bodies.Get().(*bytes.Buffer); ok {
		return b
	}
	return new(bytes.Buffer)
}

// putBodyBuffer gives b back once nothing refers to its bytes: decode
// copies whatever it keeps (encoding/json copies strings and raw values).
func (c *Client) putBodyBuffer(b *bytes.Buffer) {
	if b == nil || b.Cap() > maxPooledBody {
		return
	}
	b.Reset()
	c.bodies.Put(b)
}

// retryWait decides whether attempt n's failure is retried, and after how
// long. GET, PUT and DELETE are retried on 408, 429, 5xx and transport
// failures; POST only when the connection was never made, because any other
// POST failure may have created the resource and the caller owns
// idempotency.
func (c *Client) retryWait(method string, err error, n int) (time.Duration, bool) {
	if n >= c.retry.MaxAttempts {
		return 0, false
	}
	var apiErr *Error
	var te *errTransport
	switch {
	case errors.As(err, &apiErr):
		if method == http.MethodPost || !retryableStatus(apiErr.Status) {
			return 0, false
		}
		if apiErr.RetryAfter > 0 {
			if apiErr.RetryAfter > c.retry.MaxDelay {
				return 0, false
			}
			return apiErr.RetryAfter, true
		}
	case errors.As(err, &te):
		if permanentTransport(err) {
			return 0, false
		}
		if method == http.MethodPost && !neverSent(err) {
			return 0, false
		}
	default:
		return 0, false
	}
	return c.backoff(n), true
}

// backoff is the wait after attempt n (see [RetryPolicy.Backoff]).
func (c *Client) backoff(n int) time.Duration { return c.retry.Backoff(n) }

// Backoff is the wait after attempt n (from 1) failed: BaseDelay times
// Multiplier per attempt, capped at MaxDelay, with "equal jitter" (between half and
// all of it) so that clients failing together do not retry together. It
// is the one backoff of the worker: the client's own retries use it, and
// so does the publisher's per-item retry (package publish).
func (p RetryPolicy) Backoff(n int) time.Duration {
	m := p.Multiplier
	if !(m >= 1) {
		m = 2
	}
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d = time.Duration(float64(d) * m)
	}
	d = min(d, p.MaxDelay)
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

func retryableStatus(s int) bool {
	return s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s >= 500
}

// neverSent reports whether err proves the request never reached the
// server: dialing failed (refused, unreachable, DNS), or no token could be
// had, which the auth transport needs before it sends anything.
func neverSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var tok *tokenError
	return errors.As(err, &tok)
}

// permanentTransport reports failures a retry cannot fix: the token
// endpoint refused the credentials, or the server's certificate is bad.
func permanentTransport(err error) bool {
	var tok *tokenError
	if errors.As(err, &tok) && tok.status >= 400 && tok.status < 500 {
		return true
	}
	var cert *tls.CertificateVerificationError
	return errors.As(err, &cert)
}

// call sends a request whose answer is one object.
func call[T any](ctx context.Context, c *Client, method, route string, body any, params ...any) (*T, *Response, error) {
	r, err := c.newRequest(method, route, nil, body, params...)
	if err != nil {
		return nil, nil, err
	}
	out := new(T)
	resp, found, err := c.do(ctx, r, out)
	if err != nil || !found {
		return nil, resp, err
	}
	return out, resp, nil
}

// send sends a request whose answer is not decoded (deletes and
// segment membership changes).
func send(ctx context.Context, c *Client, method, route string, body any, params ...any) (*Response, error) {
	r, err := c.newRequest(method, route, nil, body, params...)
	if err != nil {
		return nil, err
	}
	resp, _, err := c.do(ctx, r, nil)
	return resp, err
}

// list sends a GET whose answer is a list. dataType names the template the
// optional filter check reads; query is nil for the endpoints the spec
// gives no list parameters.
func list[T any](ctx context.Context, c *Client, route, dataType string, opts *ListOptions, params ...any) ([]*T, *Response, error) {
	q, err := opts.query()
	if err != nil {
		return nil, nil, err
	}
	if c.checkFilt && opts != nil && !opts.Filter.IsZero() {
		if err := c.Templates.CheckFilter(ctx, dataType, opts.Filter); err != nil {
			return nil, nil, err
		}
	}
	r, err := c.newRequest(http.MethodGet, route, q, nil, params...)
	if err != nil {
		return nil, nil, err
	}
	var out []*T
	resp, _, err := c.do(ctx, r, &out)
	if err != nil {
		return nil, resp, err
	}
	return out, resp, nil
}

// setID puts the path id into an update body, refusing a different one.
func setID(field *int64, id int64) error {
	if *field != 0 && *field != id {
		return invalid("id", "body id %d differs from path id %d", *field, id)
	}
	*field = id
	return nil
}
