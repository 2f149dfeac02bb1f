package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Defaults of [Options].
const (
	DefaultAddr           = "127.0.0.1:8089"
	DefaultClientID       = "sandbox"
	DefaultClientSecret   = "sandbox-secret"
	DefaultTokenLifetime  = time.Hour
	DefaultReplyToDomain  = "example.com"
	DefaultRequestLogSize = 10000
)

// Environment variables read by [Options.FromEnv]. A secret is better passed
// here than as a flag, which other users of the machine can see.
const (
	EnvClientID     = "FEEDWORKER_SANDBOX_CLIENT_ID"
	EnvClientSecret = "FEEDWORKER_SANDBOX_CLIENT_SECRET"
)

// Options configure a [Server]. The zero value of each field means its
// default.
type Options struct {
	// Addr is where the subcommand listens: it passes it to
	// [Server.ListenAndServe]. New does not use it.
	Addr string
	// DataFile, if set, keeps the state across restarts: it is loaded by
	// New and rewritten atomically after every write. Empty keeps the
	// state in memory.
	DataFile string
	// ClientID and ClientSecret are the only client credentials the token
	// endpoint accepts.
	ClientID     string
	ClientSecret string
	// TokenLifetime is how long an access token is accepted.
	TokenLifetime time.Duration
	// ReplyToDomain stands for the domain of the verified reply-to address
	// that a Blast's reply_to_email must have (spec 2.8).
	ReplyToDomain string
	// Style is how successful answers are written: [StyleStrict] (the
	// default) or [StyleLoose].
	Style Style
	// Faults are injected from the start; see [Server.SetFaults] to change
	// them at run time. The zero value injects none.
	Faults Faults
	// NotSearchable names fields, as type.field (content.external_id),
	// that the templates mark not searchable and filters refuse with a
	// 400, to rehearse a service that does not search them.
	NotSearchable []string
	// RequestLogSize bounds the log of [Server.Requests]; the oldest
	// entries are dropped first.
	RequestLogSize int
	// Logger receives one debug line per request (method, path, status;
	// never headers, bodies or tokens) and errors. Nil discards.
	Logger *slog.Logger
	// Now is the clock of token expiry, the rate limit fault and
	// date_modified_utc. Nil is time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.ClientID == "" {
		o.ClientID = DefaultClientID
	}
	if o.ClientSecret == "" {
		o.ClientSecret = DefaultClientSecret
	}
	if o.TokenLifetime == 0 {
		o.TokenLifetime = DefaultTokenLifetime
	}
	if o.ReplyToDomain == "" {
		o.ReplyToDomain = DefaultReplyToDomain
	}
	if o.RequestLogSize == 0 {
		o.RequestLogSize = DefaultRequestLogSize
	}
	if o.Style == "" {
		o.Style = StyleStrict
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.TokenLifetime < 0 {
		errs = append(errs, fmt.Errorf("token lifetime %v: must be positive", o.TokenLifetime))
	}
	if o.RequestLogSize < 0 {
		errs = append(errs, fmt.Errorf("request log size %d: must not be negative", o.RequestLogSize))
	}
	if strings.ContainsAny(o.ReplyToDomain, "@ ") {
		errs = append(errs, fmt.Errorf("reply-to domain %q: want a bare domain such as example.com", o.ReplyToDomain))
	}
	if _, err := ParseStyle(string(o.Style)); err != nil {
		errs = append(errs, err)
	}
	if err := o.Faults.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// FromEnv sets the client credentials from [EnvClientID] and
// [EnvClientSecret] when they are set. getenv is usually os.Getenv. Call it
// before flag parsing so that flags win.
func (o *Options) FromEnv(getenv func(string) string) {
	if v := getenv(EnvClientID); v != "" {
		o.ClientID = v
	}
	if v := getenv(EnvClientSecret); v != "" {
		o.ClientSecret = v
	}
}

// RegisterFlags defines the sandbox flags on fs, writing into o when fs is
// parsed. The current values of o (or the defaults) are the flag defaults,
// except the client secret's, which is never printed.
//
//	--addr, --data, --client-id, --client-secret, --token-lifetime,
//	--reply-to-domain, --style, --latency, --error-rate, --error-codes,
//	--rate-limit, --rate-burst, --commit-then-fail, --not-searchable,
//	--fault-seed
func (o *Options) RegisterFlags(fs *flag.FlagSet) {
	d := o.withDefaults()
	o.Addr, o.ClientID, o.TokenLifetime, o.ReplyToDomain, o.Style = d.Addr, d.ClientID, d.TokenLifetime, d.ReplyToDomain, d.Style
	fs.StringVar(&o.Addr, "addr", o.Addr, "address to listen on")
	fs.StringVar(&o.DataFile, "data", o.DataFile, "file that keeps the sandbox's state across restarts (empty: memory only)")
	fs.StringVar(&o.ClientID, "client-id", o.ClientID, "OAuth client id the token endpoint accepts (or $"+EnvClientID+")")
	fs.Func("client-secret", "OAuth client secret the token endpoint accepts (default "+strconv.Quote(DefaultClientSecret)+", or $"+EnvClientSecret+")",
		func(s string) error {
			if s == "" {
				return errors.New("must not be empty")
			}
			o.ClientSecret = s
			return nil
		})
	fs.DurationVar(&o.TokenLifetime, "token-lifetime", o.TokenLifetime, "how long an access token is accepted")
	fs.StringVar(&o.ReplyToDomain, "reply-to-domain", o.ReplyToDomain, "domain a Blast's reply_to_email must have (the verified reply-to domain)")
	fs.Var(&o.Style, "style", "how answers are written: strict (the wire conventions' shapes) or loose (string ids, RFC 3339 times, nulls, extra fields, template flags as lists)")
	fs.DurationVar(&o.Faults.Latency, "latency", o.Faults.Latency, "fault: latency added to every /v3 request")
	fs.Float64Var(&o.Faults.ErrorRate, "error-rate", o.Faults.ErrorRate, "fault: fraction (0-1) of /v3 requests answered with one of --error-codes, unapplied")
	fs.Func("error-codes", "fault: comma-separated 5xx codes of --error-rate answers (default 500,503)", func(s string) error {
		codes, err := parseCodes(s)
		if err != nil {
			return err
		}
		o.Faults.ErrorCodes = codes
		return nil
	})
	fs.Float64Var(&o.Faults.RateLimit, "rate-limit", o.Faults.RateLimit, "fault: requests per second above which /v3 answers 429 with Retry-After (0: no limit)")
	fs.IntVar(&o.Faults.RateBurst, "rate-burst", o.Faults.RateBurst, "fault: burst allowed above --rate-limit (0: the rate, at least 1)")
	fs.Float64Var(&o.Faults.CommitThenFail, "commit-then-fail", o.Faults.CommitThenFail, "fault: fraction (0-1) of successful writes applied and then answered 500; 1 is every write")
	fs.Func("not-searchable", "comma-separated type.field names whose filters are refused, as on a service that does not search them (content.external_id)", func(s string) error {
		o.NotSearchable = append(o.NotSearchable, strings.Split(s, ",")...)
		return nil
	})
	fs.Uint64Var(&o.Faults.Seed, "fault-seed", o.Faults.Seed, "fault: seed of the random choices, for reproducible runs")
}

func parseCodes(s string) ([]int, error) {
	var codes []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("error code %q: %w", part, err)
		}
		codes = append(codes, n)
	}
	return codes, nil
}
