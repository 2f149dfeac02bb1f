package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/andybalholm/cascadia"
)

// ContentTypes are the values of type and type_rules[].type.
func ContentTypes() []string { return []string{"story", "link", "event", "need"} }

// FilterFields are the item fields include and exclude may name (the
// names package transform matches on); without fields a filter looks at
// title, summary and body.
func FilterFields() []string {
	return []string{"title", "summary", "body", "link", "categories", "author"}
}

// MaxFeedIDLength bounds feed ids, which end up in store keys, metric
// labels and external ids.
const MaxFeedIDLength = 128

// feedID is the shape of a safe feed id: it starts with a letter or digit,
// so "." and ".." cannot be ids.
var feedID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// checker collects problems on one configuration.
type checker struct {
	cfg    *Config
	probs  *Problems
	broken map[string]bool
}

// add reports a problem on field, unless decoding field or a parent of it
// failed already: a feed written as a list is one problem, not also a
// missing id and a missing url.
func (c checker) add(field, format string, args ...any) {
	for p := field; p != ""; p = parentPath(p) {
		if c.broken[p] {
			return
		}
	}
	c.probs.Add(c.cfg, field, fmt.Sprintf(format, args...))
}

// validate checks cfg after section defaults are applied and before feeds
// inherit: a feed's settings are checked as the feed wrote them, so that a
// bad value in the defaults section is reported once, at its own line,
// rather than once per feed.
func validate(cfg *Config, probs *Problems, broken map[string]bool) {
	c := checker{cfg: cfg, probs: probs, broken: broken}
	c.api(cfg.API)
	c.redis(cfg.Redis, cfg.Store)
	c.http(cfg.HTTP)
	c.publish(cfg.Publish)
	c.admin(cfg.Admin)
	c.websub(cfg.WebSub, cfg.Admin)
	c.log(&cfg.Log)
	c.process(&cfg.Process)
	c.settings("defaults", cfg.Defaults)
	c.feeds(cfg.Feeds)
}

func (c checker) api(a API) {
	switch {
	case a.BaseURL == "":
		c.add("api.base_url", "missing: set the API's URL, or %q for the local sandbox", EmbeddedAPI)
	case a.Embedded():
	default:
		c.httpURL("api.base_url", a.BaseURL)
	}
	if a.TokenURL != "" {
		c.httpURL("api.token_url", a.TokenURL)
	}
	if !slices.Contains([]string{"strict", "loose"}, a.SandboxStyle) {
		c.add("api.sandbox_style", "want strict or loose, got %q", a.SandboxStyle)
	}

	// Credentials are one of two kinds; mixing them would leave the
	// operator guessing which one is used.
	token := a.Token != "" || a.TokenFile != ""
	credentials := a.TokenURL != "" || a.ClientID != "" || a.ClientSecret != "" || a.ClientSecretFile != ""
	switch {
	case token && credentials:
		field := "api.token"
		if a.Token == "" {
			field = "api.token_file"
		}
		c.add(field, "set either a token or client credentials (token_url, client_id, client_secret), not both")
	case token || a.Embedded():
		// A token is enough, and the sandbox accepts partial credentials.
	case !credentials:
		c.add("api", "no credentials: set token (or token_file), or token_url, client_id and client_secret (or client_secret_file)")
	default:
		if a.TokenURL == "" {
			c.add("api.token_url", "missing: client credentials need token_url, client_id and client_secret")
		}
		if a.ClientID == "" {
			c.add("api.client_id", "missing: client credentials need token_url, client_id and client_secret")
		}
		if a.ClientSecret == "" && a.ClientSecretFile == "" {
			c.add("api.client_secret", "missing: client credentials need token_url, client_id and client_secret (or client_secret_file)")
		}
	}
	for i, s := range a.Scopes {
		if strings.TrimSpace(s) == "" {
			c.add(fmt.Sprintf("api.scopes[%d]", i), "must not be empty")
		}
	}
	if a.RateLimit < 0 {
		c.add("api.rate_limit", "must not be negative (0 means no limit)")
	}
	if a.RateBurst < 1 {
		c.add("api.rate_burst", "must be at least 1")
	}
	c.positive("api.timeout", a.Timeout)
	if !strings.HasPrefix(a.TemplatePath, "/") || !strings.Contains(a.TemplatePath, "{type}") {
		c.add("api.template_path", "want a path starting with / that contains {type}, got %q", a.TemplatePath)
	}
}

func (c checker) http(h HTTP) {
	if strings.TrimSpace(h.UserAgent) == "" {
		c.add("http.user_agent", "must not be empty: servers block anonymous clients")
	}
	c.positive("http.connect_timeout", h.ConnectTimeout)
	c.positive("http.timeout", h.Timeout)
	if h.MaxBodySize <= 0 {
		c.add("http.max_body_size", "must be greater than zero")
	}
	if h.MaxRedirects < 0 {
		c.add("http.max_redirects", "must not be negative")
	}
	if h.MaxConcurrency < 1 {
		c.add("http.max_concurrency", "must be at least 1")
	}
	if h.PerHostConcurrency < 1 {
		c.add("http.per_host_concurrency", "must be at least 1")
	}
	c.positive("http.min_interval", h.MinInterval)
	c.positive("http.max_interval", h.MaxInterval)
	if h.MaxInterval < h.MinInterval {
		c.add("http.max_interval", "%s is below http.min_interval (%s)", formatDuration(h.MaxInterval), formatDuration(h.MinInterval))
	}
	c.positive("http.max_backoff", h.MaxBackoff)
	if h.Proxy != "" {
		u, err := url.Parse(h.Proxy)
		if err != nil || u.Host == "" || !slices.Contains([]string{"http", "https", "socks5"}, u.Scheme) {
			c.add("http.proxy", "want an absolute http://, https:// or socks5:// URL, got %q", RedactURL(h.Proxy))
		}
	}
	for i, n := range h.AllowNetworks {
		if _, err := netip.ParsePrefix(n); err != nil {
			if _, aerr := netip.ParseAddr(n); aerr != nil {
				c.add(fmt.Sprintf("http.allow_networks[%d]", i), "want a network such as 10.20.0.0/16 or an address, got %q", n)
			}
		}
	}
}

func (c checker) publish(p Publish) {
	if p.Workers < 1 {
		c.add("publish.workers", "must be at least 1")
	}
	c.positive("publish.max_backoff", p.MaxBackoff)
	c.positive("publish.claim_ttl", p.ClaimTTL)
	c.positive("publish.lease_ttl", p.LeaseTTL)
	if p.MaxBacklog < 0 {
		c.add("publish.max_backlog", "must be 0 (no limit) or more, got %d", p.MaxBacklog)
	}
}

func (c checker) admin(a Admin) {
	if a.History < 1 || a.History > 10000 {
		c.add("admin.history", "want 1 to 10000 items per feed, got %d", a.History)
	}
	if a.Listen == "" {
		return
	}
	_, port, err := net.SplitHostPort(a.Listen)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		c.add("admin.listen", "want host:port (such as 127.0.0.1:9090 or :9090), or \"\" to turn it off, got %q", a.Listen)
	}
}

// log lower-cases the level and format it accepts, so "INFO" works.
func (c checker) log(l *Log) {
	l.Level, l.Format = strings.ToLower(l.Level), strings.ToLower(l.Format)
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, l.Level) {
		c.add("log.level", "want debug, info, warn or error, got %q", l.Level)
	}
	if !slices.Contains([]string{"text", "json"}, l.Format) {
		c.add("log.format", "want text or json, got %q", l.Format)
	}
}

// process lower-cases memory_limit's words, so "Auto" works.
func (c checker) process(p *Process) {
	p.MemoryLimit = strings.TrimSpace(p.MemoryLimit)
	if w := strings.ToLower(p.MemoryLimit); w == MemoryLimitAuto || w == MemoryLimitOff {
		p.MemoryLimit = w
	}
	if _, _, err := ParseMemoryLimit(p.MemoryLimit); err != nil {
		c.add("process.memory_limit", "%v", err)
	}
}

func (c checker) feeds(feeds []Feed) {
	first := map[string]int{}
	for i, f := range feeds {
		p := fmt.Sprintf("feeds[%d]", i)
		switch {
		case f.ID == "":
			c.add(p+".id", "missing: every feed needs an id")
		case len(f.ID) > MaxFeedIDLength:
			c.add(p+".id", "longer than %d characters", MaxFeedIDLength)
		case !feedID.MatchString(f.ID):
			c.add(p+".id", "%q: use letters, digits, '-', '_' and '.', starting with a letter or digit", f.ID)
		}
		if f.ID != "" {
			if j, dup := first[f.ID]; dup {
				prev := fmt.Sprintf("feeds[%d].id", j)
				c.add(p+".id", "duplicate feed id %q, also %s at line %d", f.ID, prev, c.cfg.Line(prev))
			} else {
				first[f.ID] = i
			}
		}
		c.feedURL(p+".url", f.URL)
		c.settings(p, f.FeedSettings)
	}
}

func (c checker) feedURL(field, s string) {
	if s == "" {
		c.add(field, "missing: every feed needs a url")
		return
	}
	u, err := url.Parse(s)
	ok := err == nil
	if ok {
		switch u.Scheme {
		case "http", "https":
			ok = u.Host != ""
		case "file":
			ok = u.Path != "" && (u.Host == "" || u.Host == "localhost") && strings.HasPrefix(u.Path, "/")
		default:
			ok = false
		}
	}
	if !ok {
		c.add(field, "not an absolute http(s) or file URL (got %q)", RedactURL(s))
	}
}

// settings checks feed settings as written under prefix ("defaults" or
// "feeds[3]"). Only what is set is checked; unset keys are inherited from
// places checked on their own.
func (c checker) settings(prefix string, s FeedSettings) {
	at := func(key string) string { return prefix + "." + key }
	if s.Interval != nil {
		h := c.cfg.HTTP
		switch {
		case *s.Interval <= 0:
			c.add(at("interval"), "must be greater than zero")
		case h.MinInterval > h.MaxInterval:
			// The bounds themselves are wrong, and reported.
		// An interval outside the bounds is refused, not clamped: the file
		// should say what actually runs.
		case *s.Interval < h.MinInterval:
			c.add(at("interval"), "%s is below http.min_interval (%s)", formatDuration(*s.Interval), formatDuration(h.MinInterval))
		case *s.Interval > h.MaxInterval:
			c.add(at("interval"), "%s is above http.max_interval (%s)", formatDuration(*s.Interval), formatDuration(h.MaxInterval))
		}
	}
	c.notNegative(at("initial_items"), s.InitialItems)

	m := s.Mapping
	if m.Type != "" {
		c.contentType(at("type"), m.Type)
	}
	for i, r := range m.TypeRules {
		rp := fmt.Sprintf("%s[%d]", at("type_rules"), i)
		if strings.TrimSpace(r.When) == "" {
			c.add(rp+".when", "missing: a rule needs an expression")
		}
		if r.Type == "" {
			c.add(rp+".type", "missing: a rule needs the type it picks")
		} else {
			c.contentType(rp+".type", r.Type)
		}
	}
	c.positiveID(at("author_id"), m.AuthorID)
	c.positiveID(at("priority_id"), m.PriorityID)
	c.positiveID(at("status_id"), m.StatusID)
	c.positiveIDs(at("segments"), m.Segments)
	c.positiveIDs(at("category_ids"), m.CategoryIDs)
	c.positivePtr(at("priority_for"), m.PriorityFor)
	c.positivePtr(at("expire_after"), m.ExpireAfter)
	c.positivePtr(at("max_age"), m.MaxAge)
	c.nonEmpty(at("categories"), m.Categories)
	for k := range m.CategoryMap {
		// An empty target is allowed: it drops that source category.
		if strings.TrimSpace(k) == "" {
			c.add(at("category_map."+k), "the source category name must not be empty")
		}
	}
	for i, r := range m.CategoryRules {
		rp := fmt.Sprintf("%s[%d]", at("category_rules"), i)
		if strings.TrimSpace(r.When) == "" {
			c.add(rp+".when", "missing: a rule needs an expression")
		}
		if len(r.Categories) == 0 {
			c.add(rp+".categories", "missing: a rule needs the categories it adds")
		}
		c.nonEmpty(rp+".categories", r.Categories)
	}
	c.filter(at("include"), m.Include)
	c.filter(at("exclude"), m.Exclude)
	if m.TitleMax != nil && *m.TitleMax < 1 {
		c.add(at("title_max"), "must be at least 1")
	}
	c.notNegative(at("summary_max"), m.SummaryMax)
	if m.FullText != nil && !slices.Contains([]string{"never", "auto", "always"}, *m.FullText) {
		c.add(at("full_text"), "want never, auto or always, got %q", *m.FullText)
	}
	c.notNegative(at("full_text_min_chars"), m.FullTextMinChars)
	if m.FullTextSelector != nil {
		if strings.TrimSpace(*m.FullTextSelector) == "" {
			c.add(at("full_text_selector"), "must not be empty; leave it out to use readability")
		} else if _, err := cascadia.ParseGroup(*m.FullTextSelector); err != nil {
			c.add(at("full_text_selector"), "not a CSS selector: %v", err)
		}
	}
	if m.Event != nil {
		c.positiveID(at("event.time_zone_id"), m.Event.TimeZoneID)
		if m.Event.DatePattern != "" {
			if _, err := regexp.Compile(m.Event.DatePattern); err != nil {
				c.add(at("event.date_pattern"), "%v", err)
			}
		}
	}
	if m.Need != nil {
		c.notNegative(at("need.default_quantity"), m.Need.DefaultQuantity)
		c.notNegative(at("need.default_by_days"), m.Need.DefaultByDays)
	}
	c.format(at("format"), s.Format)
	c.ical(prefix, s)
	c.reposts(prefix, s.Reposts)
}

func (c checker) filter(field string, f *Filter) {
	if f == nil {
		return
	}
	if len(f.Keywords) == 0 && len(f.Patterns) == 0 {
		c.add(field, "set keywords or patterns")
	}
	c.nonEmpty(field+".keywords", f.Keywords)
	for i, p := range f.Patterns {
		if _, err := regexp.Compile(p); err != nil {
			c.add(fmt.Sprintf("%s.patterns[%d]", field, i), "%v", err)
		}
	}
	for i, name := range f.Fields {
		if !slices.Contains(FilterFields(), name) {
			c.add(fmt.Sprintf("%s.fields[%d]", field, i), "unknown field %q: want one of %s", name, strings.Join(FilterFields(), ", "))
		}
	}
}

func (c checker) contentType(field, t string) {
	if !slices.Contains(ContentTypes(), t) {
		c.add(field, "unknown content type %q: want one of %s", t, strings.Join(ContentTypes(), ", "))
	}
}

func (c checker) httpURL(field, s string) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
		c.add(field, "not an absolute http(s) URL (got %q)", RedactURL(s))
	}
}

func (c checker) positive(field string, d Duration) {
	if d <= 0 {
		c.add(field, "must be greater than zero")
	}
}

func (c checker) positivePtr(field string, d *Duration) {
	if d != nil {
		c.positive(field, *d)
	}
}

func (c checker) notNegative(field string, n *int) {
	if n != nil && *n < 0 {
		c.add(field, "must not be negative")
	}
}

func (c checker) positiveID(field string, id *int64) {
	if id != nil && *id < 1 {
		c.add(field, "must be a positive id")
	}
}

func (c checker) positiveIDs(field string, ids []int64) {
	for i, id := range ids {
		if id < 1 {
			c.add(fmt.Sprintf("%s[%d]", field, i), "must be a positive id")
		}
	}
}

func (c checker) nonEmpty(field string, list []string) {
	for i, s := range list {
		if strings.TrimSpace(s) == "" {
			c.add(fmt.Sprintf("%s[%d]", field, i), "must not be empty")
		}
	}
}
