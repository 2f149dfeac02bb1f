package acs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// APIVersion is the version every request body carries in template.version.
const APIVersion = "3.0"

// DefaultTemplatePath is the path pattern of the template endpoint of a data
// type. The spec does not give that path; {type} is replaced by the data type
// (see [Client.Templates]). Change it with [WithTemplatePath].
const DefaultTemplatePath = "/v3/{type}/template"

// defaultUserAgent is sent unless [WithUserAgent] says otherwise. It is
// the package's own, for use without feedworker: the worker always passes
// http.user_agent (whose default lives in feedworker's config package).
const defaultUserAgent = "feedworker-acs/3"

// Client talks to one instance of the Audience and Content Service. It is
// safe for concurrent use. Build it with [NewClient]; the zero value is not
// usable.
type Client struct {
	// One service per resource, all sharing this client (see "Naming" in
	// the package documentation).
	Subscribers  *SubscribersService
	Unsubscribes *UnsubscribesService
	Segments     *SegmentsService
	Categories   *CategoriesService
	Content      *ContentService
	Stories      *StoriesService
	Events       *EventsService
	Links        *LinksService
	Needs        *NeedsService
	Blasts       *BlastsService
	Insights     *InsightsService
	Reference    *ReferenceService
	Templates    *TemplatesService

	baseURL *url.URL
	http    *http.Client
	// timeout is the http.Client's Timeout, applied by attempt as a
	// context deadline (see NewClient).
	timeout   time.Duration
	userAgent string
	retry     RetryPolicy
	limiter   *rate.Limiter
	pacer     *AdaptiveRate
	hook      Hook
	tmplPath  string
	checkFilt bool
	notify    func(ctx context.Context, err error)
	bodies    sync.Pool // *bytes.Buffer for answers' bodies (bodyBuffer)
	// headers are the values of the headers every request carries, made
	// once rather than per request.
	headers struct{ accept, userAgent, json []string }

	// sleep waits between attempts; tests replace it to observe the waits
	// without spending them.
	sleep func(ctx context.Context, d time.Duration) error

	// templates caches what the template endpoint answered per data type,
	// for the optional filter check; a template describes the API, not data,
	// so it does not go stale within a client's life. A nil entry is a
	// template that could not be read, reported once.
	tmplMu    sync.Mutex
	templates map[string]*Template

	// common is the one service value every resource service points at.
	common service
}

// service is what every resource service holds: the client it shares.
type service struct{ client *Client }

// Option configures a [Client] in [NewClient].
type Option func(*Client) error

// RetryPolicy bounds how the client retries a failed attempt (see the
// package documentation, section "Retries and rate limits").
type RetryPolicy struct {
	// MaxAttempts is the total number of attempts, first included; 1
	// disables retries.
	MaxAttempts int
	// BaseDelay is the wait before the second attempt; each later wait
	// doubles it, with jitter, up to MaxDelay.
	BaseDelay time.Duration
	// MaxDelay caps every wait. A Retry-After longer than MaxDelay is not
	// waited for: the error, carrying RetryAfter, goes back to the caller,
	// who can schedule the work later instead of holding a goroutine.
	MaxDelay time.Duration
	// Multiplier is how much each wait grows over the one before (0 or
	// less than 1: 2, doubling).
	Multiplier float64
}

// DefaultRetryPolicy returns the policy used unless [WithRetryPolicy] says
// otherwise: 4 attempts, waits from 250ms doubling up to 30s.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 4, BaseDelay: 250 * time.Millisecond, MaxDelay: 30 * time.Second}
}

// RequestInfo describes one HTTP attempt, as reported to a [Hook].
type RequestInfo struct {
	Method string
	// Route is the path template, such as /v3/story/{id}: bounded, so it
	// can be a metric label.
	Route string
	// Status is the HTTP status code, or 0 when no response arrived.
	Status int
	// Duration runs from sending the request to reading the whole body.
	Duration time.Duration
	// Attempt counts from 1.
	Attempt int
	// Err is the attempt's error, nil on a 2xx answer.
	Err error
}

// Hook receives every HTTP attempt the client makes, retries included. It
// runs on the calling goroutine, so it must be quick and safe for concurrent
// use. It never sees headers, so no token can reach it.
type Hook func(ctx context.Context, info RequestInfo)

// WithHook sets the instrumentation hook.
func WithHook(h Hook) Option {
	return func(c *Client) error {
		c.hook = h
		return nil
	}
}

// WithRetryPolicy replaces [DefaultRetryPolicy]; MaxAttempts must be at least 1 and
// BaseDelay at most MaxDelay.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(c *Client) error {
		if p.MaxAttempts < 1 {
			return fmt.Errorf("acs: retry policy: max attempts %d, want at least 1", p.MaxAttempts)
		}
		if p.BaseDelay < 0 || p.MaxDelay < p.BaseDelay {
			return fmt.Errorf("acs: retry policy: delays %v..%v are not a range", p.BaseDelay, p.MaxDelay)
		}
		c.retry = p
		return nil
	}
}

// WithRateLimiter makes every attempt wait for l first, so the client stays
// under a rate the caller chooses (the spec states none).
func WithRateLimiter(l *rate.Limiter) Option {
	return func(c *Client) error {
		c.limiter = l
		return nil
	}
}

// WithTemplatePath sets the path pattern of the template endpoints; it must
// begin with / and contain {type}, and no other brace. The pattern is
// plain text, escaped when sent ("%" goes out as %25). The default is
// [DefaultTemplatePath].
func WithTemplatePath(pattern string) Option {
	return func(c *Client) error {
		rest := strings.Replace(pattern, "{type}", "", 1)
		if !strings.HasPrefix(pattern, "/") || len(rest) == len(pattern) || strings.ContainsAny(rest, "{}") {
			return fmt.Errorf("acs: template path %q: must begin with / and contain {type} once, and no other brace", pattern)
		}
		c.tmplPath = pattern
		return nil
	}
}

// WithFilterCheck makes every List and All call that carries a filter check
// the filter's fields against the searchable fields of the data type's
// template first, failing with [ErrInvalid] before the list request is sent.
// Templates are fetched once per data type and client.
func WithFilterCheck() Option {
	return func(c *Client) error {
		c.checkFilt = true
		return nil
	}
}

// WithNotify sets a function told of what the client works around rather
// than fails on: a template it cannot read, so that [WithFilterCheck]
// lets that data type's filters through (once per data type and client).
// It runs on the calling goroutine and must be safe for concurrent use.
func WithNotify(f func(ctx context.Context, err error)) Option {
	return func(c *Client) error {
		c.notify = f
		return nil
	}
}

// WithUserAgent sets the User-Agent header of the client's requests
// (default "feedworker-acs/3"). Token requests go through the
// [http.Client] given to [NewClient]; its transport sets theirs.
func WithUserAgent(ua string) Option {
	return func(c *Client) error {
		c.userAgent = ua
		return nil
	}
}

// NewClient returns a client for the service at baseURL, the {base_url} of
// the spec (scheme and host, optionally a path prefix; /v3/... is appended).
//
// httpClient carries authentication in its Transport (see
// [ClientCredentials.HTTPClient] and [StaticToken.HTTPClient]); nil means a
// plain http.Client without authentication. The client never modifies it.
func NewClient(baseURL string, httpClient *http.Client, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		// url.Parse quotes the whole URL, password included: say less.
		return nil, errors.New("acs: base url: not a valid URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, fmt.Errorf("acs: base url %q: want http(s)://host[/prefix]", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("acs: base url %q: must not carry a query, fragment or user info", u.Redacted())
	}
	// The prefix as written, when its escaping is not the one Path would
	// get ("/a%2Fb" is one segment, not "/a/b").
	esc := strings.TrimSuffix(u.EscapedPath(), "/")
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	if esc != u.EscapedPath() {
		u.RawPath = esc
	}
	// "host:" is "host", as http.NewRequest would take it.
	u.Host = strings.TrimSuffix(u.Host, ":")
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	// The client's Timeout becomes a deadline on each attempt's context,
	// covering the same (the request and reading the answer), on a copy
	// of the client without it: net/http enforces a Timeout over a
	// Transport it does not know (an authenticating one, as the worker's
	// always is) with a timer and two goroutines per request.
	hc := *httpClient
	timeout := hc.Timeout
	hc.Timeout = 0
	c := &Client{
		baseURL:   u,
		http:      &hc,
		timeout:   timeout,
		userAgent: defaultUserAgent,
		retry:     DefaultRetryPolicy(),
		tmplPath:  DefaultTemplatePath,
		sleep:     sleepCtx,
		templates: map[string]*Template{},
	}
	for _, opt := range opts {
		if err := opt(c); err != nil {
			return nil, err
		}
	}
	c.headers.accept = []string{"application/json"}
	c.headers.userAgent = []string{c.userAgent}
	c.headers.json = []string{"application/json"}
	c.common.client = c
	c.Subscribers = (*SubscribersService)(&c.common)
	c.Unsubscribes = (*UnsubscribesService)(&c.common)
	c.Segments = (*SegmentsService)(&c.common)
	c.Categories = (*CategoriesService)(&c.common)
	c.Content = (*ContentService)(&c.common)
	c.Stories = (*StoriesService)(&c.common)
	c.Events = (*EventsService)(&c.common)
	c.Links = (*LinksService)(&c.common)
	c.Needs = (*NeedsService)(&c.common)
	c.Blasts = (*BlastsService)(&c.common)
	c.Insights = (*InsightsService)(&c.common)
	c.Reference = (*ReferenceService)(&c.common)
	c.Templates = (*TemplatesService)(&c.common)
	return c, nil
}

// Response is the HTTP response of a call, its body already read and closed,
// plus the paging data a list answer carried.
type Response struct {
	*http.Response

	// Page, PageSize and Total are what a list answer reported next to its
	// data; 0 when it did not report them (a bare array does not).
	Page     int
	PageSize int
	Total    int
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ctxErr returns the context's error, wrapped with the route, when ctx is
// done; callers then report it instead of whatever the transport said.
func ctxErr(ctx context.Context, method, route string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("acs: %s %s: %w", method, route, err)
	}
	return nil
}

// Ptr returns a pointer to v, for the optional fields of request types
// (Go 1.26's new(v) does the same).
func Ptr[T any](v T) *T { return &v }
