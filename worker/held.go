package worker

import (
	"context"
	"fmt"
	"time"
)

// HeldFeed is one feed whose items the flood guard holds (see the README's
// "Reposts"): how many, since when, and the command that ends the hold.
type HeldFeed struct {
	FeedID string     `json:"feed_id"`
	Count  int        `json:"count"`
	Since  *time.Time `json:"since,omitempty"`
	// Release is the command that posts them; --since DATE posts the
	// newer ones only, --drop none.
	Release string `json:"release"`
}

// releaseCommand is the command an operator runs to post a feed's held
// items (the configuration file is the operator's).
func releaseCommand(feedID string) string {
	return fmt.Sprintf("feedworker release --config CONFIG --feed %s --all", feedID)
}

// addHeld lists the feeds holding items on the status: one note read per
// configured feed (see publish.HeldFeeds), which also sets
// feedworker_items_held.
func (w *Worker) addHeld(ctx context.Context, st *Status) error {
	ids := make([]string, len(st.Feeds))
	for i, f := range st.Feeds {
		ids[i] = f.ID
	}
	held, err := w.pub.HeldFeeds(ctx, ids)
	if err != nil {
		return fmt.Errorf("held items: %w", err)
	}
	st.Held = []HeldFeed{}
	for _, h := range held {
		row := HeldFeed{FeedID: h.FeedID, Count: h.Count, Release: releaseCommand(h.FeedID)}
		if !h.Since.IsZero() {
			t := h.Since
			row.Since = &t
		}
		st.Held = append(st.Held, row)
	}
	return nil
}
