package transform

import (
	"container/list"
	"context"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/internal/netguard"
)

// ErrNotPublic is returned (wrapped) when a page or a redirect leads to an
// address that is not public (loopback, private, link-local, shared, and
// reserved ranges) and not in OGImageOptions.AllowNetworks. Feeds are
// written by strangers; their links must not reach the worker's own
// network. It is netguard.ErrNotPublic, shared with full-text fetches.
var ErrNotPublic = netguard.ErrNotPublic

// OGImageOptions configure an OGImageFetcher. Zero values take defaults.
type OGImageOptions struct {
	// Timeout bounds one fetch, from dial to the last byte (default 10s).
	Timeout time.Duration
	// MaxBytes is how much of a page is read (default 1 MiB); the og:image
	// tag sits in the head, well before that.
	MaxBytes int64
	// CacheSize is how many pages' answers are kept, least recently used
	// first out (default 1024).
	CacheSize int
	// MaxRedirects is how many redirects a fetch follows (default 5).
	MaxRedirects int
	// UserAgent is sent with each request (default http.user_agent's).
	UserAgent string
	// AllowNetworks are networks besides the public internet that pages
	// may be fetched from (http.allow_networks): the one way through the
	// address guard, for sites on an internal network, and for tests
	// against local servers.
	AllowNetworks []netip.Prefix
}

// OGImageFetcher finds the og:image of article pages, for items whose feed
// has no picture (Result.NeedsOGImage). It fetches only over http(s), only
// from public addresses (checked when dialing, after DNS, so a name cannot
// be re-pointed at a private address between check and use), with a size
// and time bound, and without a proxy, which would hide the real address.
// Answers, including "no image", are cached. It is safe for concurrent use.
type OGImageFetcher struct {
	client    *http.Client
	maxBytes  int64
	userAgent string

	mu    sync.Mutex
	cap   int
	order *list.List // of *ogEntry, most recently used first
	index map[string]*list.Element
}

type ogEntry struct {
	page, image string
}

// NewOGImageFetcher returns a fetcher with its own HTTP client.
func NewOGImageFetcher(o OGImageOptions) *OGImageFetcher {
	g := netguard.New(o.AllowNetworks)
	return newOGImageFetcher(o, func(ap netip.AddrPort) bool { return g.Allowed(ap.Addr()) })
}

// newOGImageFetcher takes the dial-time address check, so tests can tell
// one local server from another.
func newOGImageFetcher(o OGImageOptions, allow func(netip.AddrPort) bool) *OGImageFetcher {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 1 << 20
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 1024
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = 5
	}
	if o.UserAgent == "" {
		o.UserAgent = config.Default().HTTP.UserAgent
	}
	dialer := &net.Dialer{Timeout: o.Timeout}
	// Control runs with the resolved address of every connection,
	// redirects included.
	dialer.Control = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !allow(ap) {
			return fmt.Errorf("dial %s: %w", address, ErrNotPublic)
		}
		return nil
	}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   o.Timeout,
		ResponseHeaderTimeout: o.Timeout,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
	}
	maxRedirects := o.MaxRedirects
	return &OGImageFetcher{
		client: &http.Client{
			Transport: transport,
			Timeout:   o.Timeout,
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) > maxRedirects {
					return fmt.Errorf("more than %d redirects", maxRedirects)
				}
				if !isHTTP(req.URL) {
					return fmt.Errorf("redirect to %q: not http(s)", req.URL.Scheme)
				}
				return nil
			},
		},
		maxBytes:  o.MaxBytes,
		userAgent: o.UserAgent,
		cap:       o.CacheSize,
		order:     list.New(),
		index:     make(map[string]*list.Element),
	}
}

// Fetch returns the absolute http(s) URL of pageURL's og:image (or
// twitter:image), or "" when the page has none. Errors are not cached, so a
// later call tries again; answers are.
func (f *OGImageFetcher) Fetch(ctx context.Context, pageURL string) (string, error) {
	u, ok := absoluteURL(pageURL, nil)
	if !ok {
		return "", fmt.Errorf("fetch og:image of %q: not an absolute http(s) URL", pageURL)
	}
	page := u.String()
	if img, ok := f.cached(page); ok {
		return img, nil
	}
	img, cache, err := f.fetch(ctx, page)
	if err != nil {
		return "", fmt.Errorf("fetch og:image of %s: %w", page, err)
	}
	if cache {
		f.store(page, img)
	}
	return img, nil
}

// fetch gets one page; cache says whether the answer is durable.
func (f *OGImageFetcher) fetch(ctx context.Context, page string) (img string, cache bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, page, nil)
	if err != nil {
		return "", false, err
	}
	req.Header.Set("User-Agent", f.userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1")
	resp, err := f.client.Do(req)
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, f.maxBytes)
	// Drain what is left of the bounded body so the connection can be
	// reused; a failure only costs the connection.
	defer func() { _, _ = io.Copy(io.Discard, body) }()

	switch {
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return "", false, fmt.Errorf("status %s", resp.Status)
	case resp.StatusCode >= 400:
		return "", true, nil // gone or forbidden: no image, and asking again will not help
	case resp.StatusCode != http.StatusOK:
		return "", false, fmt.Errorf("status %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		mt, _, _ := mime.ParseMediaType(ct)
		if mt != "text/html" && mt != "application/xhtml+xml" {
			return "", true, nil // a PDF, an image, a feed: no og:image to find
		}
	}
	doc, err := goquery.NewDocumentFromReader(body)
	if err != nil {
		return "", false, fmt.Errorf("read page: %w", err)
	}
	return ogImage(doc, resp.Request.URL), true, nil
}

// ogImage returns the page's picture from its meta tags, resolved against
// the page's final URL.
func ogImage(doc *goquery.Document, pageURL *url.URL) string {
	for _, key := range []string{"og:image:secure_url", "og:image", "og:image:url", "twitter:image", "twitter:image:src"} {
		found := ""
		doc.Find("meta").EachWithBreak(func(_ int, s *goquery.Selection) bool {
			name := s.AttrOr("property", s.AttrOr("name", ""))
			if !strings.EqualFold(strings.TrimSpace(name), key) {
				return true
			}
			if u := imageURL(s.AttrOr("content", ""), pageURL); u != "" {
				found = u
				return false
			}
			return true
		})
		if found != "" {
			return found
		}
	}
	return ""
}

func (f *OGImageFetcher) cached(page string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.index[page]
	if !ok {
		return "", false
	}
	f.order.MoveToFront(e)
	return e.Value.(*ogEntry).image, true
}

func (f *OGImageFetcher) store(page, img string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.index[page]; ok {
		e.Value.(*ogEntry).image = img
		f.order.MoveToFront(e)
		return
	}
	f.index[page] = f.order.PushFront(&ogEntry{page: page, image: img})
	for f.order.Len() > f.cap {
		last := f.order.Back()
		f.order.Remove(last)
		delete(f.index, last.Value.(*ogEntry).page)
	}
}
