package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/feeds"
	"github.com/feedworker/feedworker/websub"
)

// openWebSub builds the WebSub subscriber when websub.public_url is set.
func (w *Worker) openWebSub(reg prometheus.Registerer, owner string) error {
	cfg := w.config()
	if cfg.WebSub.PublicURL == "" {
		return nil
	}
	sub, err := websub.New(websub.Options{
		Store:      w.store,
		PublicURL:  cfg.WebSub.PublicURL,
		UserAgent:  cfg.HTTP.UserAgent,
		Deliver:    w.handlePush,
		Lease:      cfg.WebSub.Lease.D(),
		MaxBody:    int64(cfg.HTTP.MaxBodySize),
		Owner:      owner,
		Logger:     w.log.With("component", "websub"),
		Registerer: reg,
	})
	if err != nil {
		return fmt.Errorf("websub: %w", err)
	}
	w.websub = sub
	return nil
}

// runWebSub serves the callback listener and renews subscriptions until
// ctx ends.
func (w *Worker) runWebSub(ctx context.Context, ln net.Listener) error {
	if err := w.websub.SetFeeds(ctx, configuredIDs(w.config())); err != nil {
		w.log.Warn("websub: unsubscribing feeds that left the config failed", "err", err)
	}
	srv := &http.Server{Handler: w.websub.Handler(), ReadHeaderTimeout: 10 * time.Second}
	w.websubLive.Store(true)
	defer w.websubLive.Store(false)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.websub.Run(ctx)
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(ln)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func configuredIDs(cfg *config.Config) []string {
	ids := make([]string, 0, len(cfg.Feeds))
	for _, f := range cfg.Feeds {
		ids = append(ids, f.ID)
	}
	return ids
}

// afterPoll subscribes a feed that names a hub, and stretches its polls
// to websub.fallback_interval while its subscription is live. Failures
// are logged: polling goes on regardless.
func (w *Worker) afterPoll(ctx context.Context, feed config.Feed, res *feeds.Result) {
	// Only while the callback is served (run, not once): a hub verifies
	// at once, and an unanswered verification would leave the
	// subscription pending.
	if w.websub == nil || res.Hub == "" || !w.websubLive.Load() {
		return
	}
	topic := cmp.Or(res.Topic, res.URL, feed.URL)
	if err := w.websub.Ensure(ctx, feed.ID, res.Hub, topic); err != nil {
		w.log.Warn("websub: subscribing failed; the feed is polled", "feed", feed.ID, "hub", config.RedactURL(res.Hub), "err", err)
	}
	if w.websub.Active(ctx, feed.ID) {
		res.MinInterval = w.config().WebSub.FallbackInterval.D()
	}
}

// handlePush treats a document a hub pushed like a poll's: mapped,
// deduplicated and queued exactly once. The feed's validators are left as
// they are, and it is marked partial: a push may hold only the new items.
func (w *Worker) handlePush(ctx context.Context, feedID string, body []byte, contentType string) error {
	var feed *config.Feed
	for _, f := range w.config().Feeds {
		if f.ID == feedID {
			feed = &f
			break
		}
	}
	if feed == nil {
		return fmt.Errorf("feed %s: not in the config", feedID)
	}
	res, err := feeds.ParseDocument(body, contentType)
	if err != nil {
		// A body that does not parse will not parse on a retry either.
		w.log.Warn("websub: pushed document does not parse; dropped", "feed", feedID, "err", err)
		return nil
	}
	v, err := w.pub.Validators(ctx, feedID)
	if err != nil {
		return err
	}
	res.Validators = feeds.Validators{ETag: v.ETag, LastModified: v.LastModified}
	res.Pushed = true
	return w.Handle(ctx, *feed, res)
}
