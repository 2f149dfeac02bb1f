package article

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/html/charset"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/internal/feedseries"
	"github.com/feedworker/feedworker/internal/netguard"
)

// Options configure a Fetcher. Zero values take the defaults named (the
// http section's, from config.Default, for the fields it has); the worker
// passes the http section of the configuration, so article pages are
// fetched within the feed fetcher's limits.
type Options struct {
	// UserAgent is sent with each request (default http.user_agent's).
	UserAgent string
	// ConnectTimeout bounds dialing and TLS (default
	// http.connect_timeout's); Timeout one whole fetch, body included
	// (default http.timeout's).
	ConnectTimeout time.Duration
	Timeout        time.Duration
	// MaxBytes is the largest page read, after decompression (default
	// http.max_body_size's); a larger page fails with cause too_large.
	MaxBytes int64
	// MaxRedirects is how many redirects one fetch follows (default
	// http.max_redirects').
	MaxRedirects int
	// PerHost bounds the fetches in flight to one host (default
	// http.per_host_concurrency's).
	PerHost int
	// AllowNetworks are the networks besides the public internet that
	// pages may come from (http.allow_networks).
	AllowNetworks []netip.Prefix
	// CacheSize is how many extracted articles are kept (default 1024),
	// least recently used first out.
	CacheSize int
	// Fresh is how long a cached article is used without asking the server
	// again (default 1h); after that it is revalidated with conditional GET.
	Fresh time.Duration
	// Registerer takes the fetch metric; nil registers nothing.
	Registerer prometheus.Registerer
}

// Article is a page's extracted main content.
type Article struct {
	// HTML is the content as an HTML fragment, not sanitized.
	HTML string
	// URL is the page's final URL after redirects: relative URLs in HTML
	// resolve against it.
	URL string
}

// Failure causes: the values of the result label of the fetch metric for
// a fetch that did not give an article. The set is closed.
const (
	CauseBlocked   = "blocked"    // the address guard refused the address
	CauseHTTP      = "http"       // a non-2xx answer, too many redirects
	CauseTimeout   = "timeout"    // the fetch ran out of time
	CauseNetwork   = "network"    // DNS, refused connections, TLS, resets
	CauseTooLarge  = "too_large"  // the page exceeds MaxBytes
	CauseNotHTML   = "not_html"   // a PDF, an image, a feed
	CauseNoMatch   = "no_match"   // the selector matched nothing
	CauseNoContent = "no_content" // nothing readable on the page
	CauseURL       = "bad_url"    // the item's link is not an absolute http(s) URL
)

// errRedirect marks a redirect the fetcher refused to follow.
var errRedirect = errors.New("redirect refused")

// Error is a failed article fetch: Cause is one of the causes above.
type Error struct {
	Cause string
	Err   error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Fetcher fetches and extracts articles. It is safe for concurrent use.
type Fetcher struct {
	client    *http.Client
	userAgent string
	maxBytes  int64
	timeout   time.Duration
	fresh     time.Duration
	now       func() time.Time
	hosts     *hostLimiter
	fetches   *feedseries.Vec // by feed: compact series (docs/PERFORMANCE.md)

	mu    sync.Mutex
	cap   int
	order *list.List // of *entry, most recently used first
	index map[string]*list.Element
}

// entry is a cached article with its validators.
type entry struct {
	key          string
	art          Article
	etag, lastMd string
	checked      time.Time
}

// NewFetcher returns a Fetcher with its own HTTP client.
func NewFetcher(o Options) (*Fetcher, error) {
	def := config.Default().HTTP
	if o.UserAgent == "" {
		o.UserAgent = def.UserAgent
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = def.ConnectTimeout.D()
	}
	if o.Timeout <= 0 {
		o.Timeout = def.Timeout.D()
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = int64(def.MaxBodySize)
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = def.MaxRedirects
	}
	if o.PerHost <= 0 {
		o.PerHost = def.PerHostConcurrency
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 1024
	}
	if o.Fresh <= 0 {
		o.Fresh = time.Hour
	}
	guard := netguard.New(o.AllowNetworks)
	dialer := &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second, Control: guard.Control}
	transport := &http.Transport{
		// No proxy: it would dial for us and hide the address the guard
		// must see.
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   o.ConnectTimeout,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   o.PerHost,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	maxRedirects := o.MaxRedirects
	f := &Fetcher{
		client: &http.Client{
			Transport: transport,
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) > maxRedirects {
					return fmt.Errorf("%w: more than %d redirects", errRedirect, maxRedirects)
				}
				if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
					return fmt.Errorf("%w: to %q, not http(s)", errRedirect, req.URL.Scheme)
				}
				return nil
			},
		},
		userAgent: o.UserAgent,
		maxBytes:  o.MaxBytes,
		timeout:   o.Timeout,
		fresh:     o.Fresh,
		now:       time.Now,
		hosts:     newHostLimiter(o.PerHost),
		fetches: feedseries.NewCounter("feedworker_full_text_fetches_total",
			"Article pages fetched for full text, by feed and result: ok, cached (fresh in the cache, no request), "+
				"not_modified (revalidated by a 304), or the cause of a failure (blocked, http, timeout, network, "+
				"too_large, not_html, no_match, no_content, bad_url); a failure keeps the feed's text.",
			"feed", "result"),
		cap:   o.CacheSize,
		order: list.New(),
		index: make(map[string]*list.Element),
	}
	if o.Registerer != nil {
		if err := o.Registerer.Register(f.fetches); err != nil {
			return nil, fmt.Errorf("register full text metric: %w", err)
		}
	}
	return f, nil
}

// CloseIdleConnections closes kept-alive connections (at shutdown).
func (f *Fetcher) CloseIdleConnections() { f.client.CloseIdleConnections() }

// Fetch returns the main content of the page at pageURL, extracted with
// selector ("" for readability); feedID labels the metric. A cached
// article is returned without a request while fresh, and revalidated with
// conditional GET after. When a revalidation fails, the cached article is
// returned (and the failure counted), so a flaky site does not swap an
// item's body back and forth. Errors are *Error.
func (f *Fetcher) Fetch(ctx context.Context, feedID, pageURL, selector string) (Article, error) {
	art, result, err := f.fetch(ctx, pageURL, selector)
	f.fetches.WithLabelValues(feedID, result).Inc()
	return art, err
}

func (f *Fetcher) fetch(ctx context.Context, pageURL, selector string) (Article, string, error) {
	u, err := url.Parse(strings.TrimSpace(pageURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Article{}, CauseURL, &Error{Cause: CauseURL, Err: fmt.Errorf("fetch article %q: not an absolute http(s) URL", pageURL)}
	}
	page := u.String()
	key := page + "\x00" + selector
	cached, ok := f.cached(key)
	if ok && f.now().Sub(cached.checked) < f.fresh {
		return cached.art, "cached", nil
	}

	release, err := f.hosts.acquire(ctx, u.Host)
	if err != nil {
		return Article{}, CauseTimeout, &Error{Cause: CauseTimeout, Err: fmt.Errorf("fetch article %s: wait for a slot: %w", page, err)}
	}
	defer release()
	art, fresh, err := f.get(ctx, page, selector, cached)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Cause: classify(err), Err: err}
		}
		e.Err = fmt.Errorf("fetch article %s: %w", page, e.Err)
		if ok {
			return cached.art, e.Cause, nil // stale beats nothing; counted as the failure
		}
		return Article{}, e.Cause, e
	}
	result := "ok"
	if fresh == nil {
		result = "not_modified"
		cached.checked = f.now()
		f.store(cached)
		return cached.art, result, nil
	}
	fresh.key, fresh.checked = key, f.now()
	f.store(*fresh)
	return art, result, nil
}

// get makes one request. A nil entry with a nil error means 304: the
// cached article stands.
func (f *Fetcher) get(ctx context.Context, page, selector string, cached entry) (Article, *entry, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, page, nil)
	if err != nil {
		return Article{}, nil, &Error{Cause: CauseURL, Err: err}
	}
	req.Header.Set("User-Agent", f.userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1")
	if cached.key != "" {
		if cached.etag != "" {
			req.Header.Set("If-None-Match", cached.etag)
		}
		if cached.lastMd != "" {
			req.Header.Set("If-Modified-Since", cached.lastMd)
		}
	}
	resp, err := f.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // it repeats the URL
		}
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w: %v", ctx.Err(), err)
		}
		return Article{}, nil, err
	}
	defer func() {
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		_ = resp.Body.Close()
	}()
	switch {
	case resp.StatusCode == http.StatusNotModified && cached.key != "":
		return cached.art, nil, nil
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return Article{}, nil, &Error{Cause: CauseHTTP, Err: fmt.Errorf("http status %s", resp.Status)}
	}
	ct := resp.Header.Get("Content-Type")
	if ct != "" {
		mt, _, _ := mime.ParseMediaType(ct)
		if mt != "text/html" && mt != "application/xhtml+xml" {
			return Article{}, nil, &Error{Cause: CauseNotHTML, Err: fmt.Errorf("content type %q is not HTML", mt)}
		}
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if err != nil {
		return Article{}, nil, fmt.Errorf("read page: %w", err)
	}
	if int64(len(raw)) > f.maxBytes {
		return Article{}, nil, &Error{Cause: CauseTooLarge, Err: fmt.Errorf("page larger than %d bytes", f.maxBytes)}
	}
	// The page's charset: BOM, Content-Type, <meta>, else windows-1252,
	// as browsers decide it.
	enc, _, _ := charset.DetermineEncoding(raw, ct)
	text, err := enc.NewDecoder().Bytes(raw)
	if err != nil {
		return Article{}, nil, &Error{Cause: CauseNoContent, Err: fmt.Errorf("decode page: %w", err)}
	}
	final := resp.Request.URL
	html, err := Extract(text, final, selector)
	if err != nil {
		cause := CauseNoContent
		if errors.Is(err, ErrNoMatch) {
			cause = CauseNoMatch
		}
		return Article{}, nil, &Error{Cause: cause, Err: err}
	}
	art := Article{HTML: html, URL: final.String()}
	return art, &entry{art: art, etag: resp.Header.Get("ETag"), lastMd: resp.Header.Get("Last-Modified")}, nil
}

// classify maps a transport error to a cause.
func classify(err error) string {
	var netErr net.Error
	switch {
	case errors.Is(err, netguard.ErrNotPublic):
		return CauseBlocked
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, os.ErrDeadlineExceeded):
		return CauseTimeout
	case errors.As(err, &netErr) && netErr.Timeout():
		return CauseTimeout
	case errors.Is(err, errRedirect):
		return CauseHTTP
	}
	return CauseNetwork
}

func (f *Fetcher) cached(key string) (entry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.index[key]
	if !ok {
		return entry{}, false
	}
	f.order.MoveToFront(e)
	return *e.Value.(*entry), true
}

func (f *Fetcher) store(e entry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if el, ok := f.index[e.key]; ok {
		*el.Value.(*entry) = e
		f.order.MoveToFront(el)
		return
	}
	f.index[e.key] = f.order.PushFront(&e)
	for f.order.Len() > f.cap {
		last := f.order.Back()
		f.order.Remove(last)
		delete(f.index, last.Value.(*entry).key)
	}
}

// hostLimiter bounds the fetches in flight per host.
type hostLimiter struct {
	per   int
	mu    sync.Mutex
	slots map[string]*hostSlots
}

type hostSlots struct {
	ch    chan struct{}
	users int // goroutines holding or waiting for a slot
}

func newHostLimiter(per int) *hostLimiter {
	return &hostLimiter{per: per, slots: make(map[string]*hostSlots)}
}

// acquire waits for a slot on host; release gives it back.
func (h *hostLimiter) acquire(ctx context.Context, host string) (release func(), err error) {
	h.mu.Lock()
	s, ok := h.slots[host]
	if !ok {
		s = &hostSlots{ch: make(chan struct{}, h.per)}
		h.slots[host] = s
	}
	s.users++
	h.mu.Unlock()
	done := func() {
		h.mu.Lock()
		if s.users--; s.users == 0 {
			delete(h.slots, host)
		}
		h.mu.Unlock()
	}
	select {
	case s.ch <- struct{}{}:
		return func() { <-s.ch; done() }, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}
