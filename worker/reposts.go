package worker

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/transform"
)

// repostOptions turns a feed's reposts section into the publisher's
// options. A loaded configuration has every key set (config/defaults.go);
// a key left unset, as in a configuration built in code, is off.
func repostOptions(feed config.Feed) publish.RepostOptions {
	r := feed.Reposts
	o := publish.RepostOptions{
		URL:  slices.Contains(r.Match, "url"),
		Text: slices.Contains(r.Match, "text"),
	}
	if r.AcrossFeeds != nil {
		o.AcrossFeeds = *r.AcrossFeeds
	}
	if r.MergeCategories != nil {
		o.MergeCategories = *r.MergeCategories
	}
	if r.Window != nil {
		o.Window = r.Window.D()
	}
	if r.FloodMax != nil {
		o.FloodMax = *r.FloodMax
	}
	return o
}

// logPoll is the one line per feed and poll: at info when reposts were
// recognised or items held, else at debug.
func (w *Worker) logPoll(feed config.Feed, items int, c publish.Counts) {
	level := slog.LevelDebug
	if c.Reposts.Total() > 0 || c.Held > 0 {
		level = slog.LevelInfo
	}
	w.log.Log(context.Background(), level, "feed handled", "feed", feed.ID, "items", items, "new", c.New,
		"updated", c.Updated, "duplicate", c.Duplicate, "seen", c.Seen,
		"reposts_url", c.Reposts.URL, "reposts_text", c.Reposts.Text, "reposts_across_feeds", c.Reposts.AcrossFeeds,
		"repost_updates", c.RepostUpdates, "held", c.Held)
}

// Release ends the flood guard's hold on a feed's items (feedworker
// release): mode all or since queues them for delivery (the caller drains
// the outbox), drop leaves them recorded as seen.
func (w *Worker) Release(ctx context.Context, feedID string, mode publish.ReleaseMode, since time.Time) (queued, dropped int, err error) {
	if !slices.ContainsFunc(w.config().Feeds, func(f config.Feed) bool { return f.ID == feedID }) {
		return 0, 0, fmt.Errorf("release: no feed %q in the config", feedID)
	}
	return w.pub.Release(ctx, feedID, mode, since)
}

// PreviewReposts tells which of a feed's mapped items the worker would
// take for a known story (feedworker preview), reading st and writing
// nothing to it.
func PreviewReposts(ctx context.Context, st dedupe.Store, feed config.Feed, payloads []transform.Payload) ([]publish.RepostPreview, error) {
	pub, err := publish.New(publish.Options{Store: st, API: publish.NewACS(nil)})
	if err != nil {
		return nil, err
	}
	return pub.PreviewReposts(ctx, feed.ID, payloads, publish.FeedOptions{Reposts: repostOptions(feed)})
}
