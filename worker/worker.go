// Package worker wires the pipeline together and owns its goroutines:
// the poller (feeds) hands each fetched document to Handle, which maps its
// items (transform) and gives them to the publisher's durable outbox
// (publish, over dedupe), while the publisher delivers the outbox to the
// API (acs). It also serves the admin endpoints and applies config reloads.
package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/article"
	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/feeds"
	"github.com/feedworker/feedworker/history"
	"github.com/feedworker/feedworker/internal/netguard"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
	"github.com/feedworker/feedworker/transform"
	"github.com/feedworker/feedworker/websub"
)

// Embedded sandbox credentials: the sandbox's defaults, used only in-process.
const (
	embeddedClientID     = "sandbox"
	embeddedClientSecret = "sandbox-secret"
)

// Options configure New.
type Options struct {
	Config  *config.Config
	Version string
	Logger  *slog.Logger
	// Out receives the human summaries (stdout); nil discards them.
	Out io.Writer
	// Registry receives every metric and serves /metrics; nil creates one.
	Registry *prometheus.Registry
	// Registerer, when set, is where metrics are registered instead of
	// Registry (tests wrap Registry to see every metric's description).
	Registerer prometheus.Registerer
	// Now is the clock of mapping; nil is time.Now.
	Now func() time.Time
}

// Worker is one running feedworker process.
type Worker struct {
	log     *slog.Logger
	out     io.Writer
	version string
	now     func() time.Time
	reg     *prometheus.Registry

	mu       sync.RWMutex
	cfg      *config.Config
	mappings map[string]*transform.Mapping

	store      dedupe.Store
	redis      redis.UniversalClient // nil with the embedded store
	client     *acs.Client
	pacer      *acs.AdaptiveRate
	budgetWarn budgetWarn
	pub        *publish.Publisher
	poller     *feeds.Poller
	leases     *dedupe.Owner // nil with the embedded store: one process owns every feed
	og         *transform.OGImageFetcher
	article    *article.Fetcher
	sandbox    *sandbox.Server    // the embedded API, when base_url is "embedded"
	websub     *websub.Subscriber // nil unless websub.public_url is set
	// websubLive is set while the callback listener serves.
	websubLive atomic.Bool
	metrics    *metrics
	health     *storeHealth
	lastStatus lastStatus // what the console shows while the store does not answer
	hist       *recorder  // the console's history
	api        *apiWindow // the API's last hour, for the console
	console    *consoleState
	// writes are the latest writes to the API, for /readyz.
	writes *writeWindow
	// mapSlots bounds the documents mapped at once (see mapFeed).
	mapSlots chan struct{}

	closers []func() error
}

// New builds a worker from a loaded config: the store, the API client
// (starting the embedded sandbox if asked), the publisher and the poller.
// Call Close when done. On error it returns a nil *Worker, having released
// whatever it had opened.
func New(ctx context.Context, o Options) (_ *Worker, err error) {
	cfg := o.Config
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Registerer == nil {
		o.Registerer = o.Registry
	}
	// w is not the named result: a failing return sets that to nil, and
	// the deferred Close must still see what was opened.
	w := &Worker{log: o.Logger, out: o.Out, version: o.Version, now: o.Now, reg: o.Registry, cfg: cfg,
		mapSlots: make(chan struct{}, runtime.GOMAXPROCS(0))}
	defer func() {
		if err != nil {
			_ = w.Close()
		}
	}()

	o.Registerer.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	w.metrics = newMetrics(o.Registerer, o.Version)

	if w.mappings, err = compileMappings(cfg); err != nil {
		return nil, err
	}
	w.health = newStoreHealth(o.Registerer, o.Logger.With("component", "store"), storeName(cfg), cfg.Redis.Timeout.D())
	w.log = slog.New(quietWhileDown{o.Logger.Handler(), w.health})
	problem, err := w.openStore(ctx)
	if err != nil {
		return nil, err
	}
	w.watchStore(problem)
	if err := w.openHistory(o.Registerer); err != nil {
		return nil, err
	}
	if w.redis != nil {
		// What a poll or a delivery costs Redis, for sizing and for the
		// bench (docs/PERFORMANCE.md): each command sent alone and each
		// pipeline count one.
		rt := &dedupe.RoundTripCounter{}
		w.redis.AddHook(rt)
		o.Registerer.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "feedworker_redis_round_trips_total",
			Help: "Round trips to Redis: each command sent alone and each pipeline count one.",
		}, func() float64 { return float64(rt.Count()) }))
	}
	if err := w.openAPI(ctx); err != nil {
		return nil, err
	}
	w.registerAPIMetrics(o.Registerer)
	owner := processOwner()
	w.pub, err = publish.New(publish.Options{
		Store:         w.store,
		API:           publish.NewACS(w.client),
		Logger:        w.log.With("component", "publish"),
		Registerer:    o.Registerer,
		Workers:       cfg.Publish.Workers,
		MaxBacklog:    cfg.Publish.MaxBacklog,
		ClaimTTL:      cfg.Publish.ClaimTTL.D(),
		ShutdownGrace: cfg.Publish.ShutdownGrace.D(),
		MaxBackoff:    cfg.Publish.MaxBackoff.D(),
		HeartbeatTTL:  cfg.Publish.LeaseTTL.D(),
		Owner:         owner,
		Observer:      w.hist,
		// The store forgot what it held: fetch every feed in full again,
		// so that what it forgot is seen, and reconciled, again.
		OnStoreLoss: func() { w.poller.Refetch() },
		Health:      w.health,
	})
	if err != nil {
		return nil, fmt.Errorf("publisher: %w", err)
	}
	var feedOwner feeds.Owner
	if fl, ok := w.store.(dedupe.FeedLeaser); ok && w.redis != nil {
		w.leases = dedupe.NewOwner(fl, owner, cfg.Publish.LeaseTTL.D(), w.log.With("component", "leases"))
		w.leases.SetFeeds(polledIDs(cfg))
		feedOwner = w.leases
	}
	if err := w.openWebSub(o.Registerer, owner); err != nil {
		return nil, err
	}
	nets, err := netguard.ParsePrefixes(cfg.HTTP.AllowNetworks)
	if err != nil {
		return nil, fmt.Errorf("http.allow_networks: %w", err)
	}
	w.og = transform.NewOGImageFetcher(transform.OGImageOptions{UserAgent: cfg.HTTP.UserAgent, AllowNetworks: nets})
	if w.article, err = NewArticleFetcher(cfg.HTTP, o.Registerer); err != nil {
		return nil, fmt.Errorf("full text fetcher: %w", err)
	}
	w.poller, err = feeds.NewPoller(feeds.PollerOptions{
		HTTP:       cfg.HTTP,
		Handler:    w,
		Owner:      feedOwner,
		Logger:     w.log.With("component", "feeds"),
		Registerer: o.Registerer,
		Grace:      cfg.Publish.ShutdownGrace.D(),
		Observer:   w.hist,
		Store:      w.health,
	})
	if err != nil {
		return nil, fmt.Errorf("poller: %w", err)
	}
	w.poller.Update(cfg.Feeds)
	return w, nil
}

// redisHistoryFlush is how often the history is written to Redis. The
// records wait in memory until then, with their JSON while they are sent:
// a first pass records a few thousand a second, and at the recorder's
// default of a second they were up to 3 MB of live heap at once, doubled
// by the collector's goal. A write to Redis is one round trip, a script per
// feed with records, so writing four times as often costs little.
const redisHistoryFlush = 250 * time.Millisecond

// boltHistoryFlush is how often the history is written to the embedded
// store. There the worker merges each record itself: every write that
// touches an item reads its record, rewrites it and commits the feed's
// pages again, so an item queued in one write and delivered in the next
// costs two. Written every second, most items of a first pass were; every
// three seconds, most are queued and delivered within one. The records
// held in memory stay bounded as before: the recorder writes early once a
// quarter of its bound (12,500 records, a few MB) waits, which a first
// pass reaches in about two seconds.
const boltHistoryFlush = 3 * time.Second

// openHistory opens the console's history beside the store.
func (w *Worker) openHistory(reg prometheus.Registerer) error {
	lim := history.Limits{Items: w.cfg.Admin.History, Polls: w.cfg.Admin.History, TTL: w.cfg.Store.Retention.D()}
	hs, err := OpenHistory(&Store{Store: w.store, Redis: w.redis}, w.cfg.Redis.Prefix, lim)
	if err != nil {
		return err
	}
	ro := history.RecorderOptions{Logger: w.log.With("component", "history"), Registerer: reg}
	ro.FlushEvery = boltHistoryFlush
	if w.redis != nil {
		ro.FlushEvery = redisHistoryFlush
	}
	rec := history.NewRecorder(hs, ro)
	w.hist = newRecorder(hs, rec, w.now)
	w.console = newConsoleState(reg)
	return nil
}

// polledIDs are the ids of the feeds this worker polls (enabled): replicas
// share feeds out only among those that poll the same ones.
func polledIDs(cfg *config.Config) []string {
	ids := make([]string, 0, len(cfg.Feeds))
	for _, f := range cfg.Feeds {
		if f.Enabled == nil || *f.Enabled {
			ids = append(ids, f.ID)
		}
	}
	return ids
}

// processOwner names this process in claims and leases.
func processOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%d", host, os.Getpid(), time.Now().UnixNano()%1e6)
}

func (w *Worker) openStore(ctx context.Context) (problem error, err error) {
	st, err := OpenStore(ctx, w.cfg, w.log)
	if err != nil {
		return nil, err
	}
	w.store, w.redis = st.Store, st.Redis
	w.closers = append(w.closers, st.Close)
	return st.Problem, nil
}

// Store is the store the config names, open.
type Store struct {
	dedupe.Store
	// Redis is the client behind a Redis store; nil for the embedded one.
	Redis redis.UniversalClient
	// Problem is why Redis was not usable at open (nil: it was).
	Problem error
}

// ErrNoStore is OpenExistingStore's answer for an embedded store whose
// file does not exist: no worker has run with this config.
var ErrNoStore = errors.New("the store does not exist yet")

// OpenExistingStore is OpenStore for the commands that read or mend what
// a worker left (explain, deadletters, preview): an embedded file that
// does not exist is ErrNoStore, not created, so that such a command run
// first, or with a mistyped store.path, leaves no empty store behind.
func OpenExistingStore(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Store, error) {
	if !cfg.Redis.Enabled() {
		if _, err := os.Stat(cfg.Store.Path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("embedded store %s: %w; feedworker once or run creates it", cfg.Store.Path, ErrNoStore)
		}
	}
	return OpenStore(ctx, cfg, log)
}

// OpenStore opens the configured store: Redis when redis.url or
// redis.addrs is set, else the embedded file at store.path. A Redis that
// does not answer yet, or answers with an error (a wrong password, a
// cluster address that is not a cluster), is not an error here: it is
// logged naming the setting to fix, /readyz reports it, and the worker
// retries. An embedded file held by a running worker is an error, after
// store lock timeout; so is a store written with another key layout.
func OpenStore(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Store, error) {
	if !cfg.Redis.Enabled() {
		path := cfg.Store.Path
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("embedded store %s: %w", path, err)
			}
		}
		b, err := dedupe.OpenBolt(path, dedupe.BoltOptions{Retention: cfg.Store.Retention.D(), CallTimeout: cfg.Redis.Timeout.D()})
		if errors.Is(err, dedupe.ErrLocked) {
			return nil, fmt.Errorf("embedded store %s: a worker running with this store holds its lock until it stops; "+
				"stop it first (see the README: \"With the embedded store\"): %w", path, err)
		}
		if err != nil {
			return nil, fmt.Errorf("embedded store %s: %w", path, err)
		}
		return &Store{Store: b}, nil
	}
	rc, err := RedisClient(cfg.Redis)
	if err != nil {
		return nil, err
	}
	rs := dedupe.NewRedis(rc, dedupe.RedisOptions{Prefix: cfg.Redis.Prefix, Retention: cfg.Store.Retention.D(), Partitions: cfg.Redis.Partitions, WaitReplicas: cfg.Redis.WaitReplicas})
	st := &Store{Store: rs, Redis: rc}
	if err := checkRedis(ctx, cfg.Redis, rc); err != nil {
		log.Error("redis is not usable yet; nothing is taken from feeds or published until it is (retrying)", "err", err)
		st.Problem = err
		return st, nil
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rs.CheckLayout(pctx, configuredFeeds(cfg)); err != nil {
		_ = rc.Close()
		return nil, err
	}
	if !persistent(pctx, rc) {
		log.Warn("redis keeps nothing on disk (appendonly no, no save points): a restart of it forgets what "+
			"was published, and every feed must then be reconciled with the API (one GET per 100 items) before "+
			"anything is posted; see deploy/README.md", "redis", cfg.Redis.Describe())
	}
	return st, nil
}

func configuredFeeds(cfg *config.Config) []string {
	ids := make([]string, len(cfg.Feeds))
	for i, f := range cfg.Feeds {
		ids[i] = f.ID
	}
	return ids
}

// openAPI builds the API client, starting the embedded sandbox when the
// config asks for it.
func (w *Worker) openAPI(ctx context.Context) error {
	w.api = newAPIWindow()
	w.writes = newWriteWindow()
	hook := func(ctx context.Context, info acs.RequestInfo) {
		w.metrics.apiHook(ctx, info)
		w.api.observe(info)
		w.writes.observe(info)
	}
	o := APIOptions{Logger: w.log, Hook: hook, SandboxData: w.cfg.API.SandboxData,
		// Delivery is retried in one place, by the publisher, per item
		// (publish.Publisher.backoff): the client makes one attempt a call.
		Retry: &acs.RetryPolicy{MaxAttempts: 1}}
	if rs, ok := w.store.(*dedupe.Redis); ok && w.cfg.API.SharedRateLimit {
		o.Budget = rs.RateBudget()
		o.OnBudgetError = w.budgetError
	}
	api, err := OpenAPI(ctx, w.cfg, o)
	if err != nil {
		return err
	}
	w.client, w.sandbox, w.pacer = api.Client, api.Sandbox, api.Pacer
	w.closers = append(w.closers, api.Close)
	return nil
}

// APIOptions configure OpenAPI.
type APIOptions struct {
	Logger *slog.Logger
	Hook   acs.Hook
	// SandboxData is the embedded sandbox's state file ("" keeps it in memory).
	SandboxData string
	// Budget, when set, is the request budget shared with other replicas
	// (api.shared_rate_limit); OnBudgetError hears its failures.
	Budget        acs.Budget
	OnBudgetError func(error)
	// Retry replaces the client's retry policy (nil: acs.DefaultRetryPolicy).
	Retry *acs.RetryPolicy
}

// API is a client for the configured API, with the embedded sandbox behind
// it when base_url is "embedded".
type API struct {
	Client *acs.Client
	// Pacer paces every request of Client (api.rate_limit is its ceiling).
	Pacer   *acs.AdaptiveRate
	Sandbox *sandbox.Server
	Close   func() error
}

// OpenAPI builds the client the config describes. For base_url "embedded"
// it starts the sandbox in-process on a loopback port, for the console's
// links and whoever else asks, and the worker's own requests go to the
// same handlers through its in-process transport (sandbox.Transport): the
// same routes, checks, faults and data file, without the loopback's TCP
// and HTTP machinery, which cost about a fifth of the CPU per item.
func OpenAPI(ctx context.Context, cfg *config.Config, o APIOptions) (*API, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	api := cfg.API
	base := http.DefaultTransport.(*http.Transport).Clone()
	// Requests come from the senders and, for look-ups before a first POST
	// (reconcile), from the polls in flight: keep as many idle connections
	// as can be busy at once, or every burst (the backlog releasing its
	// polls together) opens and drops new ones.
	base.MaxIdleConnsPerHost = max(16, cfg.Publish.Workers*2+cfg.HTTP.MaxConcurrency)
	out := &API{Close: func() error { return nil }}
	var hc *http.Client
	baseURL := api.BaseURL
	if baseURL == config.EmbeddedAPI {
		sb, err := sandbox.New(sandbox.Options{
			DataFile:     o.SandboxData,
			Style:        sandbox.Style(api.SandboxStyle),
			ClientID:     embeddedClientID,
			ClientSecret: embeddedClientSecret,
			Logger:       o.Logger.With("component", "sandbox"),
		})
		if err != nil {
			return nil, fmt.Errorf("embedded sandbox: %w", err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("embedded sandbox: %w", err)
		}
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := sb.Serve(sctx, ln); err != nil {
				o.Logger.Error("embedded sandbox stopped", "err", err)
			}
		}()
		out.Close = func() error { cancel(); <-done; return nil }
		out.Sandbox = sb
		baseURL = "http://" + ln.Addr().String()
		hc = acs.ClientCredentials{TokenURL: acs.TokenURL(baseURL), ClientID: embeddedClientID, ClientSecret: embeddedClientSecret}.HTTPClient(userAgent{sb.Transport(), cfg.HTTP.UserAgent})
	} else {
		var err error
		if hc, err = authClient(api, userAgent{base, cfg.HTTP.UserAgent}); err != nil {
			return nil, err
		}
	}
	if api.Timeout > 0 {
		hc.Timeout = api.Timeout.D()
	}
	opts := []acs.Option{acs.WithUserAgent(cfg.HTTP.UserAgent)}
	if o.Hook != nil {
		opts = append(opts, acs.WithHook(o.Hook))
	}
	if api.TemplatePath != "" {
		opts = append(opts, acs.WithTemplatePath(api.TemplatePath))
	}
	pacer, err := acs.NewAdaptiveRate(acs.AdaptiveOptions{Ceiling: api.RateLimit, Burst: api.RateBurst, Budget: o.Budget, OnBudgetError: o.OnBudgetError})
	if err != nil {
		_ = out.Close()
		return nil, fmt.Errorf("api client: %w", err)
	}
	out.Pacer = pacer
	opts = append(opts, acs.WithAdaptiveRate(pacer))
	if o.Retry != nil {
		opts = append(opts, acs.WithRetryPolicy(*o.Retry))
	}
	c, err := acs.NewClient(baseURL, hc, opts...)
	if err != nil {
		_ = out.Close()
		return nil, fmt.Errorf("api client: %w", err)
	}
	out.Client = c
	return out, nil
}

// authClient returns the HTTP client that authenticates as the config says:
// a static token, or OAuth 2.0 client credentials.
func authClient(api config.API, base http.RoundTripper) (*http.Client, error) {
	if api.Token != "" {
		return acs.StaticToken(api.Token).HTTPClient(base), nil
	}
	if api.TokenURL == "" || api.ClientID == "" {
		return nil, errors.New("api: set token, or token_url, client_id and client_secret")
	}
	return acs.ClientCredentials{
		TokenURL:     api.TokenURL,
		ClientID:     api.ClientID,
		ClientSecret: api.ClientSecret,
		Scopes:       api.Scopes,
	}.HTTPClient(base), nil
}

// persistent reports whether Redis writes its data to disk. A Redis that
// refuses CONFIG (as managed services do) is assumed to persist.
func persistent(ctx context.Context, rc redis.UniversalClient) bool {
	aof, err := rc.ConfigGet(ctx, "appendonly").Result()
	if err != nil {
		return true
	}
	save, err := rc.ConfigGet(ctx, "save").Result()
	if err != nil {
		return true
	}
	return aof["appendonly"] == "yes" || strings.TrimSpace(save["save"]) != ""
}

// Client is the API client the worker publishes through.
func (w *Worker) Client() *acs.Client { return w.client }

// Publisher is the worker's publisher (dead letters, backfill).
func (w *Worker) Publisher() *publish.Publisher { return w.pub }

// Sandbox is the embedded sandbox, or nil when a real API is configured.
func (w *Worker) Sandbox() *sandbox.Server { return w.sandbox }

// Registry is where the worker's metrics live.
func (w *Worker) Registry() *prometheus.Registry { return w.reg }

// Close releases the store, Redis and the embedded sandbox.
func (w *Worker) Close() error {
	var errs []error
	for i := len(w.closers) - 1; i >= 0; i-- {
		if err := w.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	w.closers = nil
	return errors.Join(errs...)
}

// redactErr removes a URL's password from an error's text; the cause is
// still reachable with errors.Is and errors.As.
func redactErr(err error, rawURL string) error {
	return &redactedError{msg: strings.ReplaceAll(err.Error(), rawURL, config.RedactURL(rawURL)), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
