package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/transform"
	"github.com/feedworker/feedworker/worker"
)

// previewRepost is how preview shows an item the worker would take for a
// known story: by which matcher, of which item, and its content.
type previewRepost struct {
	MatchedBy string `json:"matched_by"` // url, text or across_feeds
	Of        string `json:"of"`         // the known item, feed/external id
	ContentID int64  `json:"content_id,omitempty"`
	Reason    string `json:"reason"`
}

// previewStore opens the configured store for preview's repost matching,
// when there is one to read: Redis, or an embedded file that exists (a
// preview never creates one). Failing that, preview goes on without
// matching and says so.
func previewStore(ctx context.Context, cfg *config.Config, fromConfig bool, stderr io.Writer) *worker.Store {
	if !fromConfig {
		return nil
	}
	st, err := worker.OpenExistingStore(ctx, cfg, slog.New(slog.DiscardHandler))
	if errors.Is(err, worker.ErrNoStore) {
		return nil
	}
	if err != nil {
		fmt.Fprintf(stderr, "preview: reposts not matched: %v\n", err)
		return nil
	}
	return st
}

// previewReposts matches one feed's mapped items against the store, by
// result index; nil entries are items that would be posted.
func previewReposts(ctx context.Context, st *worker.Store, f config.Feed, results []transform.Result, stderr io.Writer) []*previewRepost {
	out := make([]*previewRepost, len(results))
	if st == nil {
		return out
	}
	var payloads []transform.Payload
	var at []int
	for i, r := range results {
		if r.Payload != nil && r.Skip == "" && r.Err == nil {
			payloads, at = append(payloads, *r.Payload), append(at, i)
		}
	}
	ms, err := worker.PreviewReposts(ctx, st.Store, f, payloads)
	if err != nil {
		fmt.Fprintf(stderr, "preview: %s: reposts not matched: %v\n", f.ID, err)
		return out
	}
	for _, m := range ms {
		out[at[m.Index]] = &previewRepost{MatchedBy: m.By, Of: m.Target.String(), ContentID: m.ContentID, Reason: m.Reason}
	}
	return out
}
