package worker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Summary is what a pass did, read from the worker's own metrics so that
// the printed summary and /metrics can never disagree.
type Summary struct {
	Feeds       int `json:"feeds"`
	Polled      int `json:"polled"`
	NotModified int `json:"not_modified"`
	// Partial polls got a document that ended early: its complete items
	// were taken, so they are not failures, but the feed needs a look.
	Partial     int            `json:"partial"`
	Failed      int            `json:"failed"`
	Published   map[string]int `json:"published"` // created, by content type
	Updated     int            `json:"updated"`
	Recovered   int            `json:"recovered"`
	Filtered    int            `json:"filtered"`
	ItemErrors  int            `json:"item_errors"`
	Outbox      int            `json:"outbox"`
	DeadLetters int            `json:"dead_letters"`
}

// PublishedTotal adds up the created items of every type.
func (s Summary) PublishedTotal() int {
	n := 0
	for _, v := range s.Published {
		n += v
	}
	return n
}

// String is the one-paragraph human form.
func (s Summary) String() string {
	var types []string
	for _, t := range slices.Sorted(maps.Keys(s.Published)) {
		types = append(types, fmt.Sprintf("%d %s", s.Published[t], plural(t, s.Published[t])))
	}
	pub := "nothing new"
	if len(types) > 0 {
		pub = strings.Join(types, ", ")
	}
	partial := ""
	if s.Partial > 0 {
		partial = fmt.Sprintf(", %d partial", s.Partial)
	}
	return fmt.Sprintf("feeds: %d configured, %d %s (%d not modified%s, %d failed)\n"+
		"published: %s; %d updated, %d recovered after an ambiguous failure\n"+
		"items: %d filtered, %d failed to map; outbox %d, dead letters %d",
		s.Feeds, s.Polled, plural("poll", s.Polled), s.NotModified, partial, s.Failed, pub, s.Updated, s.Recovered,
		s.Filtered, s.ItemErrors, s.Outbox, s.DeadLetters)
}

// Summary reads the counters gathered so far.
func (w *Worker) Summary(ctx context.Context) Summary {
	s := Summary{Published: map[string]int{}}
	for _, f := range w.config().Feeds {
		if f.Enabled == nil || *f.Enabled {
			s.Feeds++
		}
	}
	// Totals read from the collectors, not a Gather of the registry: that
	// builds every per-feed series' exposition, a transient tens of MB at
	// 20,000 feeds, the peak of a pass's memory.
	for result, n := range w.poller.PollTotals() {
		v := int(n)
		s.Polled += v
		switch result {
		case "ok":
		case "not_modified":
			s.NotModified += v
		case "partial":
			s.Partial += v
		default:
			s.Failed += v
		}
	}
	req := w.pub.RequestTotals()
	for typ, n := range req["created"] {
		s.Published[typ] += int(n)
	}
	for _, n := range req["updated"] {
		s.Updated += int(n)
	}
	for _, n := range req["recovered"] {
		s.Recovered += int(n)
	}
	items := w.pub.ItemTotals()
	s.Filtered += int(items["filtered"])
	s.ItemErrors += int(items["failed"])
	if st, err := w.pub.Stats(ctx); err == nil {
		s.Outbox, s.DeadLetters = st.Outbox, st.DeadLetters
	}
	return s
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// printSummary reads the summary, prints it under title and returns it.
func (w *Worker) printSummary(ctx context.Context, title string) Summary {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s := w.Summary(ctx)
	fmt.Fprintf(w.out, "== %s ==\n%s\n", title, s)
	return s
}

// Status is the status page's data: the poller's view of each feed, the
// outbox and the dead letters.
func (w *Worker) Status(ctx context.Context) (*Status, error) {
	now := w.now()
	st := &Status{Version: w.version, Generated: &now, Feeds: []FeedStatus{}, DeadLetters: []DeadLetter{}, Unreadable: []UnreadableAnswer{}}
	published := w.publishedByFeed()
	for _, f := range w.poller.Snapshot() {
		row := FeedStatus{
			ID: f.ID, URL: f.URL, MovedTo: f.MovedTo, Enabled: f.Enabled, Gone: f.Gone,
			LastResult: f.LastResult, Failures: f.Failures, LastError: f.LastError, Warnings: f.Warnings,
			Published: published[f.ID],
		}
		if f.NotOwned {
			row.LastResult = "polled by another replica"
		}
		if !f.LastPoll.IsZero() {
			t := f.LastPoll
			row.LastPoll = &t
		}
		if !f.NextPoll.IsZero() {
			t := f.NextPoll
			row.NextPoll = &t
		}
		st.Feeds = append(st.Feeds, row)
	}
	stats, err := w.pub.Stats(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	st.Outbox = int64(stats.Outbox)
	if err := w.addHeld(ctx, st); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	w.addHistory(ctx, st, now)
	st.Pacing = w.apiStatus()
	if st.WaitingForDeadOwner, err = w.pub.DeadOwnerItems(ctx); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	dls, err := w.pub.DeadLetters(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	for _, d := range dls {
		at := d.At
		st.DeadLetters = append(st.DeadLetters, DeadLetter{
			ID: d.ID, FeedID: d.FeedID, Type: d.Type, Title: d.Title, Reason: d.Reason, At: &at,
			Status: d.Status, Attempts: d.Attempts,
		})
	}
	for _, u := range w.pub.UnreadableAnswers() {
		last := u.Last
		st.Unreadable = append(st.Unreadable, UnreadableAnswer{FeedID: u.FeedID, Cause: u.Cause, Count: u.Count, Reason: u.Reason, Last: &last})
	}
	return st, nil
}

// publishedByFeed counts new items accepted per feed (from the items
// counter: the publisher labels it by feed, its request counter by type).
func (w *Worker) publishedByFeed() map[string]int64 {
	out := map[string]int64{}
	mfs, _ := w.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "feedworker_items_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, "outcome") == "new" {
				out[label(m, "feed")] += int64(m.GetCounter().GetValue())
			}
		}
	}
	return out
}

// plural names n items of a content type: "1 story", "2 stories".
func plural(typ string, n int) string {
	if n == 1 {
		return typ
	}
	if strings.HasSuffix(typ, "y") {
		return strings.TrimSuffix(typ, "y") + "ies"
	}
	return typ + "s"
}
