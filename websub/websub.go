// Package websub is the subscriber side of W3C WebSub: it subscribes to
// the hubs that feeds name, answers the hubs' verification requests, checks
// the signature of what hubs push, and hands authentic content to the
// worker as if a poll had fetched it.
//
// Subscription state lives in the store (a [dedupe.Notes] note "websub" per
// feed), so every replica answers any callback the same way, and a
// per-feed store lease makes one replica at a time talk to a hub about a
// feed. Each subscription has its own secret (32 random bytes); a delivery
// without an X-Hub-Signature, or with one that does not match (HMAC-SHA256
// only), is acknowledged, as the spec asks, and dropped.
//
// Callbacks are PublicURL + "/" + feed id. Subscriptions are renewed by
// [Subscriber.Run] before the lease the hub granted ends; feeds that leave
// the configuration are unsubscribed by [Subscriber.SetFeeds], which keeps
// the list of subscribed feeds in the store too (note "websub-feeds" of
// the pseudo feed "_"), so a restart with a shorter config still
// unsubscribes.
package websub

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/dedupe"
)

// Defaults used when [Options] leave a field zero; Lease, MaxBody and
// UserAgent take config.Default's websub.lease, http.max_body_size and
// http.user_agent.
const (
	DefaultCheckEvery = time.Minute
	// retryAfter is how long a pending or refused subscription waits
	// before it is asked for again.
	retryAfter = 5 * time.Minute
	// requestTimeout bounds one request to a hub.
	requestTimeout = 30 * time.Second
)

// Store is what the subscriber needs of the dedupe store.
type Store interface {
	dedupe.Notes
	AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, owner string) error
}

// DeliverFunc hands a pushed document to the worker. An error makes the
// callback answer 503, so the hub delivers it again.
type DeliverFunc func(ctx context.Context, feedID string, body []byte, contentType string) error

// Options configure [New]. Store, PublicURL and Deliver are required.
type Options struct {
	Store     Store
	PublicURL string
	Deliver   DeliverFunc
	// Client sends the subscription requests (default: a client with a
	// 30s timeout).
	Client *http.Client
	// UserAgent is sent with the subscription requests (default
	// http.user_agent's); the worker passes http.user_agent.
	UserAgent string
	// Lease is what hub.lease_seconds asks for (default 7 days).
	Lease time.Duration
	// CheckEvery is how often Run looks for subscriptions to renew
	// (default 1m).
	CheckEvery time.Duration
	// MaxBody bounds a pushed body (default 10 MiB).
	MaxBody    int64
	Owner      string
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Subscriber manages the subscriptions of one process.
type Subscriber struct {
	o   Options
	log *slog.Logger
	m   *metrics

	mu    sync.Mutex
	feeds []string // configured feeds, for Run's renewals
}

// New returns a subscriber and registers its metrics.
func New(o Options) (*Subscriber, error) {
	if o.Store == nil || o.Deliver == nil {
		return nil, errors.New("websub: Store and Deliver are required")
	}
	if u, err := url.Parse(o.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("websub: public url %q is not an absolute http(s) URL", o.PublicURL)
	}
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	if o.Client == nil {
		o.Client = &http.Client{Timeout: requestTimeout}
	}
	def := config.Default()
	o.UserAgent = cmp.Or(o.UserAgent, def.HTTP.UserAgent)
	o.Lease = cmp.Or(max(o.Lease, 0), def.WebSub.Lease.D())
	o.CheckEvery = cmp.Or(max(o.CheckEvery, 0), DefaultCheckEvery)
	o.MaxBody = cmp.Or(max(o.MaxBody, 0), int64(def.HTTP.MaxBodySize))
	o.Owner = cmp.Or(o.Owner, "websub-"+randomHex(6))
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	return &Subscriber{o: o, log: o.Logger, m: m}, nil
}

// Subscription states, as the note and the metrics name them.
const (
	statePending       = "pending"       // asked; the hub has not verified yet
	stateActive        = "active"        // verified; the lease runs
	stateUnsubscribing = "unsubscribing" // unsubscribe asked
	stateDenied        = "denied"        // the hub refused (hub.mode=denied)
	stateFailed        = "failed"        // the hub answered the request with an error
)

func states() []string {
	return []string{statePending, stateActive, stateUnsubscribing, stateDenied, stateFailed}
}

// subscription is the "websub" note of a feed.
type subscription struct {
	V      int    `json:"v"`
	Hub    string `json:"hub"`
	Topic  string `json:"topic"`
	Secret string `json:"secret"` // hex; the HMAC key
	State  string `json:"state"`
	// Asked is when the last request went to the hub; Expires when the
	// lease the hub granted ends (active only); Lease what it granted.
	Asked   int64  `json:"asked"`
	Expires int64  `json:"expires,omitempty"`
	Lease   int64  `json:"lease,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

const (
	noteName  = "websub"
	indexFeed = "_" // no configured feed id can start with "_"
	indexName = "websub-feeds"
)

func (s *Subscriber) load(ctx context.Context, feedID string) (*subscription, error) {
	b, ok, err := s.o.Store.Note(ctx, feedID, noteName)
	if err != nil || !ok {
		return nil, err
	}
	var sub subscription
	if err := json.Unmarshal(b, &sub); err != nil || sub.V != 1 {
		return nil, fmt.Errorf("websub state of feed %s unreadable: %v", feedID, err)
	}
	return &sub, nil
}

func (s *Subscriber) save(ctx context.Context, feedID string, sub *subscription) error {
	if sub == nil {
		return s.o.Store.SetNote(ctx, feedID, noteName, nil)
	}
	sub.V = 1
	b, err := json.Marshal(sub)
	if err != nil {
		return err
	}
	return s.o.Store.SetNote(ctx, feedID, noteName, b)
}

// Callback is the URL hubs call for a feed.
func (s *Subscriber) Callback(feedID string) string {
	return s.o.PublicURL + "/" + url.PathEscape(feedID)
}

// Active reports whether a feed has a verified subscription whose lease
// runs, so the worker may poll it at the fallback interval only.
func (s *Subscriber) Active(ctx context.Context, feedID string) bool {
	sub, err := s.load(ctx, feedID)
	return err == nil && sub != nil && sub.State == stateActive && time.Unix(sub.Expires, 0).After(time.Now())
}

// renewBefore is how long before the granted lease ends it is renewed: a
// fifth of it, and at least two renewal checks.
func (s *Subscriber) renewBefore(lease time.Duration) time.Duration {
	return max(lease/5, 2*s.o.CheckEvery)
}

// Ensure makes sure a feed is subscribed at hub for topic: it asks the hub
// when the feed has no subscription, a different hub or topic, a lease
// that ends soon, or a request that failed long enough ago. It is called
// after each poll of a feed that names a hub; several replicas may call
// it at once, and one of them talks to the hub.
func (s *Subscriber) Ensure(ctx context.Context, feedID, hub, topic string) error {
	sub, err := s.load(ctx, feedID)
	if err != nil {
		return err
	}
	now := time.Now()
	if sub != nil && sub.Hub == hub && sub.Topic == topic {
		asked := time.Unix(sub.Asked, 0)
		switch sub.State {
		case stateActive:
			if time.Unix(sub.Expires, 0).Sub(now) > s.renewBefore(time.Duration(sub.Lease)*time.Second) {
				return nil
			}
		case statePending, stateDenied, stateFailed, stateUnsubscribing:
			if now.Sub(asked) < retryAfter {
				return nil
			}
		}
	}
	if sub != nil && sub.State == stateActive && (sub.Hub != hub || sub.Topic != topic) {
		// The feed moved to another hub or topic: leave the old one.
		if err := s.request(ctx, sub.Hub, "unsubscribe", sub.Topic, feedID, ""); err != nil {
			s.log.Warn("websub: unsubscribing from the feed's former hub failed", "feed", feedID, "hub", config.RedactURL(sub.Hub), "err", err)
		}
		sub = nil
	}
	return s.subscribe(ctx, feedID, hub, topic, sub)
}

// subscribe asks the hub, under the feed's websub lease. prev, when it is
// for the same hub and topic, keeps its secret.
func (s *Subscriber) subscribe(ctx context.Context, feedID, hub, topic string, prev *subscription) error {
	lease := "websub:" + feedID
	ok, err := s.o.Store.AcquireLease(ctx, lease, s.o.Owner, time.Minute)
	if err != nil || !ok {
		return err // another replica is at it
	}
	defer func() { _ = s.o.Store.ReleaseLease(context.WithoutCancel(ctx), lease, s.o.Owner) }()

	next := &subscription{Hub: hub, Topic: topic, Secret: randomHex(32), State: statePending, Asked: time.Now().Unix()}
	if prev != nil && prev.Hub == hub && prev.Topic == topic && prev.Secret != "" {
		next.Secret = prev.Secret
		if prev.State == stateActive {
			// A renewal: deliveries go on under the running lease.
			next.State, next.Expires, next.Lease = stateActive, prev.Expires, prev.Lease
		}
	}
	// Stored first: the hub may verify before its answer reaches us.
	if err := s.save(ctx, feedID, next); err != nil {
		return err
	}
	if err := s.addToIndex(ctx, feedID); err != nil {
		return err
	}
	if err := s.request(ctx, hub, "subscribe", topic, feedID, next.Secret); err != nil {
		if next.State != stateActive {
			next.State = stateFailed
		}
		next.Reason = err.Error()
		s.m.requests.WithLabelValues("subscribe", "error").Inc()
		return errors.Join(err, s.save(ctx, feedID, next))
	}
	s.m.requests.WithLabelValues("subscribe", "accepted").Inc()
	s.log.Info("websub: subscription requested", "feed", feedID, "hub", config.RedactURL(hub), "lease", s.o.Lease)
	return nil
}

// request sends one subscription request (W3C WebSub 5.1); the hub answers
// 202 and verifies later.
func (s *Subscriber) request(ctx context.Context, hub, mode, topic, feedID, secret string) error {
	form := url.Values{
		"hub.mode":     {mode},
		"hub.topic":    {topic},
		"hub.callback": {s.Callback(feedID)},
	}
	if mode == "subscribe" {
		form.Set("hub.lease_seconds", strconv.FormatInt(int64(s.o.Lease/time.Second), 10))
		form.Set("hub.secret", secret)
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hub, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("%s at hub %s: %w", mode, config.RedactURL(hub), err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", s.o.UserAgent)
	resp, err := s.o.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%s at hub %s: %w", mode, config.RedactURL(hub), err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s at hub %s: %s: %s", mode, config.RedactURL(hub), resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// SetFeeds tells the subscriber which feeds are configured: Run renews
// only theirs, and a feed that was subscribed and is no longer configured
// is unsubscribed.
func (s *Subscriber) SetFeeds(ctx context.Context, feedIDs []string) error {
	s.mu.Lock()
	s.feeds = slices.Clone(feedIDs)
	s.mu.Unlock()
	index, err := s.index(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range index {
		if slices.Contains(feedIDs, id) {
			continue
		}
		errs = append(errs, s.unsubscribe(ctx, id))
	}
	return errors.Join(errs...)
}

// unsubscribe leaves a feed's hub (W3C WebSub 5.1); the hub's verification
// then deletes the state. A feed whose hub refuses is forgotten anyway:
// its lease ends by itself.
func (s *Subscriber) unsubscribe(ctx context.Context, feedID string) error {
	sub, err := s.load(ctx, feedID)
	if err != nil {
		return err
	}
	if sub != nil && (sub.State == stateActive || sub.State == statePending) {
		sub.State, sub.Asked = stateUnsubscribing, time.Now().Unix()
		if err := s.save(ctx, feedID, sub); err != nil {
			return err
		}
		if err := s.request(ctx, sub.Hub, "unsubscribe", sub.Topic, feedID, ""); err != nil {
			s.m.requests.WithLabelValues("unsubscribe", "error").Inc()
			s.log.Warn("websub: unsubscribe failed; the lease will end by itself", "feed", feedID, "hub", config.RedactURL(sub.Hub), "err", err)
			_ = s.save(ctx, feedID, nil)
		} else {
			s.m.requests.WithLabelValues("unsubscribe", "accepted").Inc()
			s.log.Info("websub: unsubscribe requested: the feed left the config", "feed", feedID, "hub", config.RedactURL(sub.Hub))
		}
	} else if sub != nil {
		_ = s.save(ctx, feedID, nil)
	}
	return s.removeFromIndex(ctx, feedID)
}

// Run renews subscriptions whose lease ends soon, and refreshes the
// subscription gauge, every CheckEvery until ctx ends.
func (s *Subscriber) Run(ctx context.Context) {
	t := time.NewTicker(s.o.CheckEvery)
	defer t.Stop()
	for {
		s.check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Subscriber) check(ctx context.Context) {
	s.mu.Lock()
	feeds := slices.Clone(s.feeds)
	s.mu.Unlock()
	counts := map[string]int{}
	for _, id := range feeds {
		sub, err := s.load(ctx, id)
		if err != nil {
			s.log.Warn("websub: reading the subscription failed", "feed", id, "err", err)
			continue
		}
		if sub == nil {
			continue
		}
		counts[sub.State]++
		if sub.State == stateActive {
			left := time.Until(time.Unix(sub.Expires, 0))
			if left <= s.renewBefore(time.Duration(sub.Lease)*time.Second) {
				if err := s.subscribe(ctx, id, sub.Hub, sub.Topic, sub); err != nil {
					s.log.Warn("websub: renewing failed", "feed", id, "hub", config.RedactURL(sub.Hub), "err", err)
				}
			}
		}
	}
	for _, st := range states() {
		s.m.subs.WithLabelValues(st).Set(float64(counts[st]))
	}
}

func (s *Subscriber) index(ctx context.Context) ([]string, error) {
	b, ok, err := s.o.Store.Note(ctx, indexFeed, indexName)
	if err != nil || !ok {
		return nil, err
	}
	var ids []string
	if err := json.Unmarshal(b, &ids); err != nil {
		return nil, fmt.Errorf("websub feed list unreadable: %w", err)
	}
	return ids, nil
}

// editIndex changes the list of subscribed feeds under a store lease, so
// that replicas do not lose each other's additions.
func (s *Subscriber) editIndex(ctx context.Context, edit func([]string) []string) error {
	const lease = "websub:index"
	for held := false; !held; {
		var err error
		if held, err = s.o.Store.AcquireLease(ctx, lease, s.o.Owner, 10*time.Second); err != nil {
			return err
		}
		if !held {
			// Another replica edits the list; a lease of 10s bounds the wait.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	defer func() { _ = s.o.Store.ReleaseLease(context.WithoutCancel(ctx), lease, s.o.Owner) }()
	ids, err := s.index(ctx)
	if err != nil {
		return err
	}
	next := edit(slices.Clone(ids))
	if slices.Equal(next, ids) {
		return nil
	}
	b, err := json.Marshal(next)
	if err != nil {
		return err
	}
	return s.o.Store.SetNote(ctx, indexFeed, indexName, b)
}

func (s *Subscriber) addToIndex(ctx context.Context, feedID string) error {
	return s.editIndex(ctx, func(ids []string) []string {
		if !slices.Contains(ids, feedID) {
			ids = append(ids, feedID)
		}
		return ids
	})
}

func (s *Subscriber) removeFromIndex(ctx context.Context, feedID string) error {
	return s.editIndex(ctx, func(ids []string) []string {
		return slices.DeleteFunc(ids, func(id string) bool { return id == feedID })
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
