package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Config is the whole configuration file. Every key is documented here;
// REFERENCE.md, the configuration reference, is generated from these types
// and their comments, and a test fails when it is stale, so the two cannot
// drift.
type Config struct {
	API     API     `yaml:"api"`
	Redis   Redis   `yaml:"redis"`
	Store   Store   `yaml:"store"`
	HTTP    HTTP    `yaml:"http"`
	Publish Publish `yaml:"publish"`
	Admin   Admin   `yaml:"admin"`
	WebSub  WebSub  `yaml:"websub"`
	Log     Log     `yaml:"log"`
	Process Process `yaml:"process"`
	// Defaults apply to every feed that does not set the same key itself.
	Defaults FeedSettings `yaml:"defaults"`
	Feeds    []Feed       `yaml:"feeds"`

	// File is the path the configuration was loaded from (not a YAML key).
	File string `yaml:"-"`
	// lines maps a field path such as "feeds[3].url" to its line in File
	// (see lineIndex).
	lines *lineIndex
}

// API says how to reach the Audience and Content Service.
type API struct {
	// BaseURL is the service root (paths start with /v3 below it). The
	// special value "embedded" starts the local sandbox in-process.
	BaseURL string `yaml:"base_url"`
	// SandboxData is the state file of the embedded sandbox (base_url
	// "embedded"), so its content survives restarts like the store does.
	// Empty keeps the sandbox in memory.
	SandboxData string `yaml:"sandbox_data"`
	// SandboxStyle is how the embedded sandbox writes its answers:
	// "strict" (the shapes of the wire conventions) or "loose" (string ids,
	// RFC 3339 times, nulls, extra fields, template flags as lists), to try
	// the worker against a service that answers less tidily.
	SandboxStyle string `yaml:"sandbox_style"`
	// TokenURL is the OAuth 2.0 token endpoint (client credentials grant).
	TokenURL string `yaml:"token_url"`
	// ClientID identifies the worker to the token endpoint.
	ClientID string `yaml:"client_id"`
	// ClientSecret or ClientSecretFile (a path whose content, trimmed, is the
	// secret). Never logged.
	ClientSecret     string `yaml:"client_secret"`
	ClientSecretFile string `yaml:"client_secret_file"`
	// Scopes are requested with the token (none by default).
	Scopes []string `yaml:"scopes"`
	// Token is a static bearer token, an alternative to client credentials.
	Token string `yaml:"token"`
	// TokenFile is a path whose content, trimmed, is the token. Never logged.
	TokenFile string `yaml:"token_file"`
	// RateLimit is the most requests per second sent to the API (0: no
	// limit). It is a ceiling: the worker adapts below it to the service's
	// 429s, Retry-After and rate-limit headers.
	RateLimit float64 `yaml:"rate_limit"`
	// SharedRateLimit makes every replica on the same Redis share one
	// request budget (one rate for all), instead of each pacing itself;
	// ignored with the embedded store.
	SharedRateLimit bool `yaml:"shared_rate_limit"`
	// RateBurst is the burst allowed above RateLimit (default 1).
	RateBurst int `yaml:"rate_burst"`
	// Timeout bounds one API request (default 30s).
	Timeout Duration `yaml:"timeout"`
	// TemplatePath is the path pattern of the template endpoints, with
	// {type} standing for the data type (default "/v3/{type}/template").
	TemplatePath string `yaml:"template_path"`
}

// Redis is the shared dedupe store: a single server (url, or one address),
// a Sentinel set or a Redis Cluster. Without url and addrs the embedded
// store is used.
type Redis struct {
	// URL is a redis://, rediss:// or unix:// URL of a single server,
	// optionally with a password (never logged) and a database number.
	URL string `yaml:"url"`
	// Mode is standalone, sentinel or cluster. When empty it is inferred:
	// sentinel with master_name, cluster with more than one address,
	// standalone otherwise.
	Mode string `yaml:"mode"`
	// Addrs are host:port addresses: the server (standalone), the
	// sentinels (sentinel) or seed nodes (cluster).
	Addrs []string `yaml:"addrs"`
	// MasterName is the name the sentinels know the master by (sentinel).
	MasterName string `yaml:"master_name"`
	// Username and Password authenticate to Redis (ACL or requirepass);
	// PasswordFile is a path whose content, trimmed, is the password. The
	// password is never logged. With sentinel, the sentinels are asked
	// with the same credentials.
	Username     string `yaml:"username"`
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
	// DB is the database number (standalone and sentinel only; Redis
	// Cluster has one database).
	DB int `yaml:"db"`
	// TLS configures TLS to every Redis node (and sentinel).
	TLS RedisTLS `yaml:"tls"`
	// Prefix is put in front of every key, so several deployments can share
	// one Redis (default "feedworker:"). It must not contain "{" or "}".
	Prefix string `yaml:"prefix"`
	// Partitions is how many shards the outbox, dead letters and claims are
	// split into, each in its own Cluster slot (default 16). Every replica
	// must use the same number; changing it on a store with data is
	// refused at start.
	Partitions int `yaml:"partitions"`
	// WaitReplicas, above zero, makes every outbox claim wait (WAIT, up to
	// 1s) until that many replicas have it before anything is sent, so a
	// Sentinel failover cannot forget that a POST may be under way (default
	// 0; with Sentinel set 1, and min-replicas-to-write 1 on the servers).
	// Not with cluster.
	WaitReplicas int `yaml:"wait_replicas"`
	// Timeout bounds every store call (default 3s): the Redis dial, read,
	// write and connection-pool waits, and the embedded store's calls. A
	// store that does not answer within it counts as down: nothing is
	// fetched until it answers again (see the README: store outages).
	Timeout Duration `yaml:"timeout"`
}

// RedisTLS is TLS to Redis.
type RedisTLS struct {
	// Enabled turns TLS on (a rediss:// URL turns it on too).
	Enabled bool `yaml:"enabled"`
	// CAFile is a PEM bundle of the CAs to trust (default: the system's).
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a client certificate and its key (PEM),
	// for servers that require one.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// InsecureSkipVerify skips verifying the server's certificate (tests
	// only).
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// Redis modes.
const (
	RedisStandalone = "standalone"
	RedisSentinel   = "sentinel"
	RedisCluster    = "cluster"
)

// Enabled reports whether a Redis is configured (else the embedded store
// is used).
func (r Redis) Enabled() bool { return r.URL != "" || len(r.Addrs) > 0 }

// Topology is Mode, or the mode inferred from the other settings when
// Mode is empty.
func (r Redis) Topology() string {
	switch {
	case r.Mode != "":
		return r.Mode
	case r.MasterName != "":
		return RedisSentinel
	case len(r.Addrs) > 1:
		return RedisCluster
	}
	return RedisStandalone
}

// Store configures the embedded store used when no Redis is configured.
type Store struct {
	// Path of the embedded database file (default "feedworker.db").
	Path string `yaml:"path"`
	// Retention is how long an item that left its feed is remembered
	// (default 90d). Items still present in their feed are never forgotten.
	Retention Duration `yaml:"retention"`
}

// HTTP configures how feeds are fetched.
type HTTP struct {
	// UserAgent is sent with every fetch (default
	// "feedworker/<version> (+https://github.com/feedworker/feedworker)").
	UserAgent string `yaml:"user_agent"`
	// ConnectTimeout bounds connecting to a feed's server, TLS included.
	ConnectTimeout Duration `yaml:"connect_timeout"` // default 10s
	// Timeout bounds a whole fetch, body included.
	Timeout Duration `yaml:"timeout"` // whole fetch, default 60s
	// MaxBodySize is the largest feed body read, after decompression; a
	// larger one fails the fetch.
	MaxBodySize ByteSize `yaml:"max_body_size"` // default 10MiB
	// MaxRedirects is how many redirects one fetch follows (0: none).
	MaxRedirects int `yaml:"max_redirects"` // default 10
	// FollowPermanentRedirects makes a feed that answered 301 or 308 be
	// polled at its new URL from then on (the store remembers it, the
	// status page asks for the config to be updated, a new URL in the
	// config clears it); false fetches the configured URL every time and
	// follows the redirect on each poll.
	FollowPermanentRedirects *bool `yaml:"follow_permanent_redirects"` // default true
	// Proxy is an http(s) proxy URL; empty means the environment's
	// HTTP_PROXY/HTTPS_PROXY/NO_PROXY.
	Proxy string `yaml:"proxy"`
	// MaxConcurrency bounds fetches in flight overall (default 32) and
	// PerHostConcurrency per host (default 4).
	MaxConcurrency     int `yaml:"max_concurrency"`
	PerHostConcurrency int `yaml:"per_host_concurrency"`
	// MinInterval and MaxInterval are the floor and ceiling of any feed's
	// poll interval (defaults 1m and 24h); MaxBackoff caps failure backoff
	// (default 6h).
	MinInterval Duration `yaml:"min_interval"`
	MaxInterval Duration `yaml:"max_interval"`
	MaxBackoff  Duration `yaml:"max_backoff"`
	// AllowNetworks are networks (CIDRs such as 10.20.0.0/16, or single
	// addresses) that article pages may be fetched from for og:image and
	// full text. Pages on private, loopback, link-local and other
	// non-public addresses are refused otherwise; list the internal
	// networks your own sites live on. Feeds themselves are not limited.
	AllowNetworks []string `yaml:"allow_networks"`
}

// Publish configures delivery to the API.
type Publish struct {
	// Workers is how many items are sent to the API at once (default 8
	// with Redis, 64 with the embedded store, whose commits wait for the
	// disk: concurrent senders share them).
	Workers int `yaml:"workers"`
	// MaxBackoff caps the retry backoff of one item (default 1h). Items are
	// retried until they succeed or fail permanently (dead letters).
	MaxBackoff Duration `yaml:"max_backoff"`
	// ClaimTTL is how long one worker may hold an item it is sending
	// (default 5m): the bound for a worker alive but stuck. LeaseTTL is how
	// long a worker owns a feed without renewing, and how long its
	// heartbeat lasts (default 1m): the items of a worker whose heartbeat
	// is gone (killed) are taken over by another at once.
	ClaimTTL Duration `yaml:"claim_ttl"`
	LeaseTTL Duration `yaml:"lease_ttl"`
	// ShutdownGrace is the shutdown budget: how long in-flight work may
	// finish after a stop signal before it is cut short (default 8s), so
	// that the process ends within about this plus 2s. Keep it below the
	// platform's kill deadline (Kubernetes terminationGracePeriodSeconds).
	ShutdownGrace Duration `yaml:"shutdown_grace"`
	// MaxBacklog is how many items this worker may have queued and not yet
	// delivered before polling waits for deliveries (default 2000; 0 turns
	// the wait off). It bounds the outbox, and so the memory of a first pass
	// over many feeds, without slowing it: delivery is the slower side.
	MaxBacklog int `yaml:"max_backlog"`
}

// Admin is the HTTP endpoint for /metrics, /healthz, /readyz and the status page.
type Admin struct {
	// Listen is the address (default "127.0.0.1:9090"; empty string disables).
	Listen string `yaml:"listen"`
	// Pprof exposes net/http/pprof under /debug/pprof/ (default false).
	Pprof bool `yaml:"pprof"`
	// History is how many items and polls the console remembers per feed
	// (default 200): their fates, shown at / and /feeds/ID and by
	// feedworker explain.
	History int `yaml:"history"`
	// Token allows the console's actions (poll now, retry a dead letter) to
	// whoever sends it as a bearer token or signs in with it; unset, the
	// console is read-only. Never logged.
	Token string `yaml:"token"`
}

// WebSub subscribes to the hubs of feeds that name one (W3C WebSub), so
// that new items are pushed to the worker instead of waiting for a poll.
type WebSub struct {
	// PublicURL is the address at which hubs reach the callback listener,
	// as seen from outside (a reverse proxy's URL, say); each feed's
	// callback is this URL plus "/" and the feed id. Empty turns WebSub off.
	PublicURL string `yaml:"public_url"`
	// Listen is the host:port of the callback listener.
	Listen string `yaml:"listen"`
	// Lease is the subscription lifetime asked of hubs (hub.lease_seconds);
	// subscriptions are renewed before the lease the hub granted ends.
	Lease Duration `yaml:"lease"`
	// FallbackInterval is how often a feed with a live subscription is
	// still polled, in case its hub fails (never more often than its own
	// interval).
	FallbackInterval Duration `yaml:"fallback_interval"`
}

// Log configures log/slog output.
type Log struct {
	Level  string `yaml:"level"`  // debug, info (default), warn, error
	Format string `yaml:"format"` // text (default) or json
}

// Process tunes the worker process itself; read at start, a reload does
// not change it.
type Process struct {
	// MemoryLimit is the Go runtime's soft memory limit: as the process's
	// memory nears it, the garbage collector runs more often instead of
	// letting the heap grow to twice what is live. "auto" (default): 90% of
	// the memory limit of the container (cgroup) the worker runs in, none
	// outside one; "off": no limit; or a size such as 256MiB. Set too low
	// for the live data (a feed of 100,000 items is parsed whole), the
	// collector runs nearly constantly and costs up to half the CPU; the
	// GOMEMLIMIT environment variable, when set, wins.
	MemoryLimit string `yaml:"memory_limit"`
}

// Feed is one polled feed: an id, a URL and settings that override Defaults.
type Feed struct {
	// ID names the feed in metrics, logs and external ids. Changing it makes
	// every item of the feed new, so keep it stable.
	ID string `yaml:"id"`
	// URL is where the feed is fetched: an absolute http, https or file URL.
	URL          string `yaml:"url"`
	FeedSettings `yaml:",inline"`
}

// FeedSettings are the settings a feed can set or inherit from defaults.
// Pointers tell "not set" from a zero value.
type FeedSettings struct {
	// Enabled false keeps a feed configured but not polled.
	Enabled *bool `yaml:"enabled"` // default true
	// Interval is the time between two polls of the feed, within
	// http.min_interval and http.max_interval.
	Interval *Duration `yaml:"interval"` // default 15m
	// InitialItems is how many newest items are published the first time a
	// feed is seen (default 10; 0 publishes none). The rest are recorded as seen.
	InitialItems *int `yaml:"initial_items"`
	// RecreateDeleted: when an update answers 404 (deleted on the service),
	// post the item again instead of recording it as removed (default false).
	RecreateDeleted *bool `yaml:"recreate_deleted"`
	// Format is what the URL serves: auto (detected: iCalendar from a
	// text/calendar type or a BEGIN:VCALENDAR body, else RSS, Atom or JSON
	// Feed), feed (RSS, Atom or JSON Feed only) or ical (iCalendar only).
	Format *string `yaml:"format"`
	// Reposts says how a story that comes back under a new identity (a
	// site moved to https, a new platform, a second feed carrying it) is
	// recognised and kept from reaching subscribers twice. Its keys are
	// inherited one by one.
	Reposts Reposts `yaml:"reposts"`
	Mapping `yaml:",inline"`
}

// Reposts configures repost matching and the flood guard (see the README's
// "Reposts").
type Reposts struct {
	// Match lists the matchers tried for an item whose identity is new:
	// url (its normalised link or GUID is a known item's) and text (same
	// title, day and near-identical body). An empty list turns matching off.
	Match []string `yaml:"match"` // default [url, text]
	// AcrossFeeds matches by url against the items of every feed of the
	// same content type too: the later sighting is not posted.
	AcrossFeeds *bool `yaml:"across_feeds"` // default true
	// Window bounds the text matcher to the feed's items first seen this
	// long ago at most.
	Window *Duration `yaml:"window"` // default 720h
	// MergeCategories adds a later sighting's categories from another feed
	// to the first sighting's content by a PUT.
	MergeCategories *bool `yaml:"merge_categories"` // default true
	// FloodMax is how many new items dated before the newest item already
	// seen one poll may bring before they are held for
	// `feedworker release` (0: never held).
	FloodMax *int `yaml:"flood_max"` // default 25
}

// Mapping says how a feed's items become content. See package transform.
type Mapping struct {
	// Type is the content type: story (default), link, event or need.
	Type string `yaml:"type"`
	// TypeRules pick the type per item; the first rule whose expression is
	// true wins, else Type applies.
	TypeRules []TypeRule `yaml:"type_rules"`

	// AuthorID, PriorityID and StatusID are ids of the service's authors,
	// priorities and statuses given to every item (none by default).
	AuthorID   *int64 `yaml:"author_id"`
	PriorityID *int64 `yaml:"priority_id"`
	// PriorityFor sets priority_until_date_utc to the publish date plus this.
	PriorityFor *Duration `yaml:"priority_for"`
	StatusID    *int64    `yaml:"status_id"`
	// Private, ExclusiveToSegment, AvailableInPartner, EnableComments,
	// EnableLinkTracking and Evergreen are the content flags of the same
	// names, sent when set (Evergreen only for stories and links).
	Private *bool `yaml:"private"`
	// Segments are ids of the segments every item is published to.
	Segments           []int64 `yaml:"segments"`
	ExclusiveToSegment *bool   `yaml:"exclusive_to_segment"`
	AvailableInPartner *bool   `yaml:"available_in_partner"`
	EnableComments     *bool   `yaml:"enable_comments"`
	EnableLinkTracking *bool   `yaml:"enable_link_tracking"`
	Evergreen          *bool   `yaml:"evergreen"`
	// MoreButtonText is the label of the item's "read more" button.
	MoreButtonText *string `yaml:"more_button_text"`
	// ExpireAfter sets expiration_date_utc to the publish date plus this.
	ExpireAfter *Duration `yaml:"expire_after"`

	// Categories are static category names; CategoryIDs static ids.
	Categories  []string `yaml:"categories"`
	CategoryIDs []int64  `yaml:"category_ids"`
	// CategoryMap maps an item's own category (source name, compared
	// case-insensitively) to a category name of the service.
	CategoryMap map[string]string `yaml:"category_map"`
	// PassUnmappedCategories passes the item's categories that CategoryMap
	// does not name through unchanged (default false: dropped).
	PassUnmappedCategories *bool `yaml:"pass_unmapped_categories"`
	// CreateCategories allows POST /v3/category for names the service does
	// not have yet (default false: unknown names are reported and dropped).
	CreateCategories *bool `yaml:"create_categories"`
	// CategoryRules add categories to the items their expression is true for.
	CategoryRules []CategoryRule `yaml:"category_rules"`

	// Include keeps only items matching it; Exclude drops items matching it.
	Include *Filter `yaml:"include"`
	Exclude *Filter `yaml:"exclude"`
	// MaxAge drops items published longer ago than this.
	MaxAge *Duration `yaml:"max_age"`
	// RequireImage drops items without an image (default false).
	RequireImage *bool `yaml:"require_image"`

	// TitleMax and SummaryMax cut longer titles and summaries, at a word
	// boundary where there is one.
	TitleMax   *int `yaml:"title_max"`   // default 250 characters
	SummaryMax *int `yaml:"summary_max"` // default 500 characters
	// FetchOGImage fetches the article page for og:image when the item has
	// no image (default false).
	FetchOGImage *bool `yaml:"fetch_og_image"`
	// FullText fetches the article page and uses its main content as the
	// body: never (default), auto (when the item's content is missing,
	// shorter than full_text_min_chars or ends in a truncation marker such
	// as "…", "[...]" or "Read more") or always. The feed's text stays
	// the summary; a failed fetch keeps the feed's text as the body.
	FullText *string `yaml:"full_text"`
	// FullTextMinChars is the length of text (in characters) below which
	// full_text auto fetches the article (default 500).
	FullTextMinChars *int `yaml:"full_text_min_chars"`
	// FullTextSelector is a CSS selector for the article's main content
	// on its page (such as "article .post-body"); without it the content
	// is found by a readability algorithm.
	FullTextSelector *string `yaml:"full_text_selector"`

	// Event says where events' data is in the items, for type event.
	Event *EventFields `yaml:"event"`
	// Need says where needs' data is in the items, for type need.
	Need *NeedFields `yaml:"need"`
	// ICal says how an iCalendar feed's events are published. Its keys are
	// inherited one by one.
	ICal ICal `yaml:"ical"`
}

// ICal configures iCalendar (RFC 5545) feeds, whose VEVENTs become Events.
type ICal struct {
	// Window is how far ahead recurring events are expanded into
	// occurrences, each its own Event.
	Window *Duration `yaml:"window"`
	// WindowBack is how far back occurrences are still mapped (so an
	// ongoing or just-ended event is updated rather than forgotten).
	WindowBack *Duration `yaml:"window_back"`
	// OnCancel is what happens to a published event marked
	// STATUS:CANCELLED, or gone from the calendar while still in the
	// future: delete (DELETE at the API, once) or keep (left as it is).
	OnCancel *string `yaml:"on_cancel"`
	// InitialPast publishes occurrences that already ended when the worker
	// first sees them; false records them as seen only.
	InitialPast *bool `yaml:"initial_past"`
}

// TypeRule picks a content type for items matching an expression.
type TypeRule struct {
	// When is an expression over the item (see package transform), such
	// as has_category("Events").
	When string `yaml:"when"`
	// Type is the content type of the items When is true for.
	Type string `yaml:"type"`
}

// CategoryRule adds categories to items matching an expression.
type CategoryRule struct {
	// When is an expression over the item, as in type_rules.
	When string `yaml:"when"`
	// Categories are the category names added to the items When is true for.
	Categories []string `yaml:"categories"`
}

// Filter matches items by keyword (case-insensitive substring) or regular
// expression, on the fields named (default title, summary and body).
type Filter struct {
	// Keywords match as case-insensitive substrings.
	Keywords []string `yaml:"keywords"`
	// Patterns are regular expressions in Go's syntax ((?i) for any case).
	Patterns []string `yaml:"patterns"`
	// Fields are the item fields looked at: title, summary, body, link,
	// categories and author.
	Fields []string `yaml:"fields"`
}

// EventFields name the feed extension paths that hold event data, such as
// "ev:startdate" or "xCal:dtstart". The ev: and xCal: namespaces are read
// without configuration; these override or add to them.
type EventFields struct {
	// Start, End, Location, StreetAddress, City, PostalCode, Region,
	// Country, AllDay and RegistrationURL are the paths of the event's
	// fields of the same names.
	Start           string `yaml:"start"`
	End             string `yaml:"end"`
	Location        string `yaml:"location"`
	StreetAddress   string `yaml:"street_address"`
	City            string `yaml:"city"`
	PostalCode      string `yaml:"postal_code"`
	Region          string `yaml:"region"`
	Country         string `yaml:"country"`
	AllDay          string `yaml:"all_day"`
	RegistrationURL string `yaml:"registration_url"`
	// TimeZone is an extension path; TimeZoneID a fixed event_time_zone id.
	TimeZone   string `yaml:"time_zone"`
	TimeZoneID *int64 `yaml:"time_zone_id"`
	// DatePattern is a regular expression applied to the start and end
	// values before they are parsed; its group named "date" (else its first
	// group) is the date text. For feeds that write dates inside a title.
	DatePattern string `yaml:"date_pattern"`
	// DateLayout is a Go time layout for the date text (default: the common
	// feed date formats are tried).
	DateLayout string `yaml:"date_layout"`
	// TimeZoneName is the IANA zone of dates written without one (default UTC).
	TimeZoneName string `yaml:"time_zone_name"`
}

// NeedFields name the extension paths that hold a Need's data.
type NeedFields struct {
	// Quantity is the path of the quantity needed, ByDate of the date it
	// is needed by (optional: an item without one is published without a
	// by-date, or with default_by_days' date).
	Quantity string `yaml:"quantity"`
	ByDate   string `yaml:"by_date"`
	// DefaultQuantity is the quantity of items whose Quantity is missing.
	DefaultQuantity *int `yaml:"default_quantity"`
	// DefaultByDays dates the need of an item without a by-date that many
	// days after the item's publication date. Without it (or without a
	// publication date) such a Need is published without
	// need_by_date_utc, which the API does not require.
	DefaultByDays *int `yaml:"default_by_days"`
}

// Duration is a time.Duration written as Go does ("90s", "15m", "1h30m")
// or with a day or week suffix ("90d", "2w").
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalText parses the forms described on Duration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes d in Go's form.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// ParseDuration parses Go durations plus whole-number "d" and "w" suffixes.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			// NaN fails every comparison; the upper bound keeps the
			// conversion to int64 nanoseconds from overflowing.
			if err != nil || !(v >= 0) || v*float64(unit) > float64(math.MaxInt64) {
				return 0, fmt.Errorf("invalid duration %q: want a number from 0 to about 106000 before %q", s, suffix)
			}
			return time.Duration(v * float64(unit)), nil
		}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: use forms such as 90s, 15m, 2h, 7d", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("invalid duration %q: must not be negative", s)
	}
	return v, nil
}

// The words process.memory_limit takes besides a size.
const (
	MemoryLimitAuto = "auto"
	MemoryLimitOff  = "off"
)

// minMemoryLimit is the smallest process.memory_limit accepted: below it
// the collector would run without pause for the worker's fixed memory.
const minMemoryLimit = 32 << 20

// ParseMemoryLimit reads a process.memory_limit value: auto, off (both
// give limit 0) or a size of at least 32MiB.
func ParseMemoryLimit(s string) (limit int64, auto bool, err error) {
	switch s {
	case MemoryLimitAuto:
		return 0, true, nil
	case MemoryLimitOff:
		return 0, false, nil
	}
	var b ByteSize
	if err := b.UnmarshalText([]byte(s)); err != nil {
		return 0, false, fmt.Errorf("want auto, off or a size such as 512MiB, got %q", s)
	}
	if b < minMemoryLimit {
		return 0, false, fmt.Errorf("%q is below 32MiB, too little for the worker's own fixed memory", s)
	}
	return int64(b), false, nil
}

// ByteSize is a size in bytes written as a number or with a unit
// ("512KiB", "10MiB", "1GB").
type ByteSize int64

// UnmarshalText parses the forms described on ByteSize.
func (b *ByteSize) UnmarshalText(t []byte) error {
	s := strings.TrimSpace(string(t))
	units := []struct {
		suffix string
		mul    int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mul := int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mul = strings.TrimSpace(n), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mul {
		return fmt.Errorf("invalid size %q: use forms such as 1048576, 512KiB, 10MiB", string(t))
	}
	*b = ByteSize(n * mul)
	return nil
}
