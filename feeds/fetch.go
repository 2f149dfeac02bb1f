package feeds

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-ical"
	"github.com/feedworker/feedworker/config"
	"github.com/mmcdole/gofeed"
)

// acceptHeader prefers feed types but accepts anything: many feeds are served
// as text/html or application/octet-stream, and the parser decides.
const acceptHeader = "application/rss+xml, application/atom+xml, application/feed+json, application/rdf+xml;q=0.9, " +
	"application/xml;q=0.9, text/xml;q=0.9, application/json;q=0.8, text/calendar;q=0.8, */*;q=0.5"

// Validators are the conditional-GET state of a feed: the ETag and
// Last-Modified values of the last response that was handled in full.
type Validators struct {
	ETag         string
	LastModified string
}

// Result is what one fetch learned.
type Result struct {
	// NotModified is true for a 304 (or an unchanged file): nothing to do.
	NotModified bool
	// Feed is the parsed document; nil when NotModified or on error, and
	// for an iCalendar document, which is in Calendar instead.
	Feed *gofeed.Feed
	// Calendar is the parsed iCalendar document (see isCalendar), when
	// the URL served one.
	Calendar *ical.Calendar
	// Hub and Topic are the WebSub hub the feed names and the topic URL it
	// is known by there (see discoverHub); empty when it names no hub.
	Hub, Topic string
	// MinInterval is set by the Handler: the least time to the next poll
	// (a feed its hub pushes is polled at the WebSub fallback interval).
	// The schedule keeps it until the next 200.
	MinInterval time.Duration
	// Pushed marks a document a WebSub hub delivered: it may hold only some
	// of the feed's items, so nothing may be concluded from what it lacks.
	Pushed bool
	// Validators to send next time. On a 304 they are the ones sent.
	Validators Validators
	// URL is the final URL after redirects.
	URL string
	// MovedTo is the URL the feed permanently moved to: the target of the
	// chain of 301/308 redirects at the start of the fetch. Empty when the
	// first redirect was temporary (302/307) or there was none.
	MovedTo string
	// StatusCode is the final HTTP status (0 for file URLs).
	StatusCode int
	// ContentType is the Content-Type header of the final response.
	ContentType string
	// Bytes is the size of the body as transferred, before decompression.
	Bytes int64
	// Partial is set when the document ended early (a truncated download,
	// a server that stopped writing) or broke off at a syntax error: Feed
	// holds the items that were complete before the cut, Validators are
	// left empty so the next poll fetches the whole document again, and the
	// poll counts as ClassPartial. It says where reading stopped.
	Partial string
	// Sniffed describes the encoding guessed for a document that declared
	// none and was not UTF-8 ("" when nothing was guessed).
	Sniffed string
	// Warnings are the Handler's feed-level warnings about the document
	// (WarnMapping); the poller adds the fetch's own (see Warning).
	Warnings []Warning
	// Hint is how long the server or the document asked us to wait before
	// polling again (RSS <ttl>, Cache-Control max-age, Expires); zero when
	// it said nothing. The schedule only uses it to poll less often.
	Hint time.Duration

	// itemCount is len(Feed.Items) before ReleaseItems emptied it.
	itemCount     int
	itemsReleased bool
}

// Fetcher gets feeds over HTTP(S) or from file:// URLs with the politeness
// and limits of config.HTTP. It is safe for concurrent use.
type Fetcher struct {
	transport    *http.Transport
	userAgent    string
	maxBody      int64
	maxRedirects int
	timeout      time.Duration
	now          func() time.Time
	// bodies holds memory for documents to be read into (*[]byte).
	bodies sync.Pool
}

// defaultMaxBody caps documents parsed outside a Fetcher.
func defaultMaxBody() int64 { return int64(config.Default().HTTP.MaxBodySize) }

// NewFetcher builds a Fetcher from the http section of the configuration,
// using config.Default's for zero fields. The proxy is h.Proxy when set,
// else HTTP_PROXY/HTTPS_PROXY/NO_PROXY from the environment.
func NewFetcher(h config.HTTP) (*Fetcher, error) {
	f := &Fetcher{
		userAgent:    h.UserAgent,
		maxBody:      int64(h.MaxBodySize),
		maxRedirects: h.MaxRedirects,
		timeout:      h.Timeout.D(),
		now:          time.Now,
	}
	def := config.Default().HTTP
	if f.userAgent == "" {
		f.userAgent = def.UserAgent
	}
	if f.maxBody <= 0 {
		f.maxBody = int64(def.MaxBodySize)
	}
	if f.maxRedirects <= 0 {
		f.maxRedirects = def.MaxRedirects
	}
	if f.timeout <= 0 {
		f.timeout = def.Timeout.D()
	}
	connect := h.ConnectTimeout.D()
	if connect <= 0 {
		connect = def.ConnectTimeout.D()
	}
	proxy := http.ProxyFromEnvironment
	if h.Proxy != "" {
		pu, err := url.Parse(h.Proxy)
		if err != nil || pu.Host == "" {
			return nil, fmt.Errorf("http proxy %q: not an absolute url", config.RedactURL(h.Proxy))
		}
		switch pu.Scheme {
		case "http", "https", "socks5", "socks5h":
		default:
			return nil, fmt.Errorf("http proxy %q: unsupported scheme %q", config.RedactURL(h.Proxy), pu.Scheme)
		}
		proxy = http.ProxyURL(pu)
	}
	perHost := h.PerHostConcurrency
	if perHost <= 0 {
		perHost = def.PerHostConcurrency
	}
	dialer := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	f.transport = &http.Transport{
		Proxy:                 proxy,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   connect,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   perHost,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		// We ask for gzip/deflate ourselves so the decompressed size can be
		// capped; the transport's transparent gzip has no limit.
		DisableCompression: true,
	}
	return f, nil
}

// MaxBodySize is the largest body, compressed or not, the Fetcher accepts.
func (f *Fetcher) MaxBodySize() int64 { return f.maxBody }

// CloseIdleConnections closes the kept-alive connections (after a reload
// that changed many hosts, or at shutdown).
func (f *Fetcher) CloseIdleConnections() { f.transport.CloseIdleConnections() }

// Fetch gets and parses the feed at rawURL, sending v as If-None-Match and
// If-Modified-Since. The whole call, body included, is bounded by the
// configured timeout and ctx.
//
// Errors name the feed URL (without credentials) and wrap the cause: ErrGone,
// *RetryAfterError, *StatusError, ErrTooLarge, ErrTooManyRedirects,
// ErrRedirectLoop, *ParseError, or a network/timeout error; Class maps them to
// a metric label. On error the returned *Result may still be non-nil and
// carry what was learned (URL, MovedTo, Bytes, StatusCode) for logs and
// status; its Feed is nil.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string, v Validators) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()

	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: invalid url", config.RedactURL(rawURL))
	}
	var res *Result
	switch u.Scheme {
	case "http", "https":
		res, err = f.fetchHTTP(ctx, u, v)
	case "file":
		res, err = f.fetchFile(ctx, u, v)
	default:
		err = fmt.Errorf("unsupported url scheme %q", u.Scheme)
	}
	if err != nil {
		// Report the deadline rather than whatever the interrupted read said.
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) && Class(err) == ClassNetwork {
			err = fmt.Errorf("%w: %v", ctx.Err(), err)
		}
		if res != nil && res.URL != "" && res.URL != rawURL {
			return res, fmt.Errorf("fetch %s (redirected to %s): %w", config.RedactURL(rawURL), config.RedactURL(res.URL), err)
		}
		return res, fmt.Errorf("fetch %s: %w", config.RedactURL(rawURL), err)
	}
	return res, nil
}

// redirects follows one fetch's redirect chain.
type redirects struct {
	max       int
	permanent bool // every hop so far was a 301 or 308
	movedTo   string
}

func (r *redirects) check(req *http.Request, via []*http.Request) error {
	if len(via) > r.max {
		return fmt.Errorf("%w (more than %d)", ErrTooManyRedirects, r.max)
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		// A remote server must not send us to file:// or elsewhere.
		return fmt.Errorf("redirect to unsupported scheme %q", req.URL.Scheme)
	}
	next := req.URL.String()
	for _, prev := range via {
		if prev.URL.String() == next {
			return fmt.Errorf("%w: back to %s", ErrRedirectLoop, config.RedactURL(next))
		}
	}
	code := 0
	if req.Response != nil {
		code = req.Response.StatusCode
	}
	if r.permanent && (code == http.StatusMovedPermanently || code == http.StatusPermanentRedirect) {
		r.movedTo = next
	} else {
		r.permanent = false
	}
	return nil
}

func (f *Fetcher) fetchHTTP(ctx context.Context, u *url.URL, v Validators) (*Result, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("User-Agent", f.userAgent)
	req.Header.Set("Accept", acceptHeader)
	req.Header.Set("Accept-Encoding", "gzip, deflate")
	if v.ETag != "" {
		req.Header.Set("If-None-Match", v.ETag)
	}
	if v.LastModified != "" {
		req.Header.Set("If-Modified-Since", v.LastModified)
	}
	rd := &redirects{max: f.maxRedirects, permanent: true}
	client := &http.Client{Transport: f.transport, CheckRedirect: rd.check}
	resp, err := client.Do(req)
	if err != nil {
		// *url.Error repeats the URL, possibly with credentials in its query.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		res := &Result{MovedTo: rd.movedTo}
		if resp != nil {
			res.URL, res.StatusCode = resp.Request.URL.String(), resp.StatusCode
		}
		return res, err
	}
	defer func() {
		// Drain a little so the connection can be reused, but never wait on a
		// server that keeps talking.
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		_ = resp.Body.Close()
	}()

	res := &Result{
		URL:         resp.Request.URL.String(),
		MovedTo:     rd.movedTo,
		StatusCode:  resp.StatusCode,
		ContentType: resp.Header.Get("Content-Type"),
	}
	now := f.now()
	switch code := resp.StatusCode; {
	case code == http.StatusNotModified:
		res.NotModified = true
		res.Validators = v
		res.Hint = headerHint(resp.Header, now)
		return res, nil
	case code == http.StatusGone:
		return res, ErrGone
	case code == http.StatusTooManyRequests,
		code == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
		return res, &RetryAfterError{StatusCode: code, RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), now)}
	case code < 200 || code > 299:
		return res, &StatusError{StatusCode: code, Status: resp.Status}
	}

	body, wire, err := f.readBody(resp)
	res.Bytes = wire
	if err != nil {
		return res, err
	}
	feed, cal, info, err := parseStoppable(ctx, body, res.ContentType, f.maxBody, func() { f.putBody(body) })
	if err != nil {
		return res, err
	}
	res.Feed, res.Calendar = feed, cal
	if feed != nil {
		res.Hub, res.Topic = discoverHub(resp.Header, feed)
	}
	res.Validators = Validators{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
	res.setInfo(info)
	res.Hint = max(feedHint(feed), headerHint(resp.Header, now))
	return res, nil
}

// setInfo records what parsing learned. A partial document must not leave
// validators behind: with them the next poll could get a 304 for the same
// broken body and never see the items after the cut.
func (r *Result) setInfo(info parseInfo) {
	if info.Partial != nil {
		r.Partial = info.Partial.Error()
		r.Validators = Validators{}
	}
	if info.Sniffed != nil {
		r.Sniffed = info.Sniffed.String()
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// readBody reads the decoded body, capping both the bytes on the wire and the
// bytes after decompression at maxBody: the first stops a never-ending body,
// the second a gzip bomb.
func (f *Fetcher) readBody(resp *http.Response) (body []byte, wire int64, err error) {
	cr := &countingReader{r: io.LimitReader(resp.Body, f.maxBody+1)}
	var r io.Reader = cr
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(cr)
		if err != nil {
			return nil, cr.n, fmt.Errorf("gzip content-encoding: %w", err)
		}
		defer zr.Close()
		r = zr
	case "deflate":
		// "deflate" should be zlib-wrapped, but many servers send raw
		// DEFLATE; the zlib header is recognisable.
		br := bufio.NewReader(cr)
		if h, err := br.Peek(2); err == nil && h[0]&0x0F == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
			zr, err := zlib.NewReader(br)
			if err != nil {
				return nil, cr.n, fmt.Errorf("deflate content-encoding: %w", err)
			}
			defer zr.Close()
			r = zr
		} else {
			fr := flate.NewReader(br)
			defer fr.Close()
			r = fr
		}
	default:
		return nil, 0, fmt.Errorf("unsupported content-encoding %q", enc)
	}
	var size int64
	if r == cr {
		size = resp.ContentLength // -1 when unknown
	}
	body, err = readCapped(f.bodyBuffer(), r, f.maxBody, size)
	switch {
	case cr.n > f.maxBody:
		return nil, cr.n, fmt.Errorf("%w: more than %d bytes on the wire", ErrTooLarge, f.maxBody)
	case errors.Is(err, ErrTooLarge):
		return nil, cr.n, fmt.Errorf("%w: more than %d bytes decompressed", ErrTooLarge, f.maxBody)
	case err != nil:
		return nil, cr.n, fmt.Errorf("read body: %w", err)
	}
	return body, cr.n, nil
}

// fetchFile reads a local feed. The file's size and modification time make
// its ETag, so unchanged files answer NotModified like a 304.
func (f *Fetcher) fetchFile(ctx context.Context, u *url.URL, v Validators) (*Result, error) {
	if u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("file url with host %q: only local files are supported", u.Host)
	}
	if u.Path == "" {
		return nil, errors.New("file url without a path")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fh, err := os.Open(u.Path)
	if err != nil {
		return nil, &FileError{Path: u.Path, Err: err}
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, &FileError{Path: u.Path, Err: err}
	}
	if !fi.Mode().IsRegular() {
		// A FIFO or device could block or never end.
		return nil, &FileError{Path: u.Path, Err: errors.New("not a regular file")}
	}
	res := &Result{URL: u.String()}
	res.Validators = Validators{
		ETag:         fmt.Sprintf(`"%x-%x"`, fi.Size(), fi.ModTime().UnixNano()),
		LastModified: fi.ModTime().UTC().Format(http.TimeFormat),
	}
	if v.ETag != "" && v.ETag == res.Validators.ETag {
		res.NotModified = true
		return res, nil
	}
	if fi.Size() > f.maxBody {
		return res, fmt.Errorf("%w: file has %d bytes, limit %d", ErrTooLarge, fi.Size(), f.maxBody)
	}
	body, err := readCapped(f.bodyBuffer(), fh, f.maxBody, fi.Size())
	res.Bytes = int64(len(body))
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return res, fmt.Errorf("%w: file grew beyond %d bytes", ErrTooLarge, f.maxBody)
		}
		return res, &FileError{Path: u.Path, Err: err}
	}
	feed, cal, info, err := parseAny(body, "", f.maxBody)
	f.putBody(body)
	if err != nil {
		res.Validators = Validators{}
		return res, err
	}
	res.Feed, res.Calendar = feed, cal
	res.setInfo(info)
	res.Hint = feedHint(feed)
	return res, nil
}

// parseRetryAfter reads Retry-After as delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, int64(366*24*3600))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// headerHint reads the freshness lifetime the response grants: Cache-Control
// max-age (minus Age), else Expires relative to the server's Date (so clock
// skew between us and the server does not matter).
func headerHint(h http.Header, now time.Time) time.Duration {
	var maxAge time.Duration = -1
	for _, cc := range h.Values("Cache-Control") {
		for _, d := range strings.Split(cc, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(name) {
			case "no-store", "no-cache":
				return 0
			case "max-age":
				if n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64); err == nil && n >= 0 {
					maxAge = time.Duration(min(n, int64(366*24*3600))) * time.Second
				}
			}
		}
	}
	if maxAge >= 0 {
		if age, err := strconv.ParseInt(h.Get("Age"), 10, 64); err == nil && age > 0 {
			maxAge -= time.Duration(age) * time.Second
		}
		return max(maxAge, 0)
	}
	exp := h.Get("Expires")
	if exp == "" {
		return 0
	}
	t, err := http.ParseTime(exp)
	if err != nil {
		return 0
	}
	base := now
	if d, err := http.ParseTime(h.Get("Date")); err == nil {
		base = d
	}
	return max(t.Sub(base), 0)
}
