package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/transform"
)

// The flood guard: a feed that suddenly republishes its history (a
// platform switch, a feed URL now serving another site) brings many new
// identities dated before anything it showed before. Those are held,
// recorded as seen only, and kept in the feed's "held" note until an
// operator runs `feedworker release`, which queues them like a backfill
// (ActionBackfill queues a seen-only item once, so a release repeated
// after a failure posts nothing twice) or drops them.

const (
	heldNote   = "held"
	newestNote = "newest"
)

// heldItems is the "held" note: the held items' outbox data.
type heldItems struct {
	Items []heldItem `json:"items"`
}

type heldItem struct {
	ExternalID  string    `json:"external_id"`
	Hash        string    `json:"hash"`
	Type        string    `json:"type"`
	PublishDate time.Time `json:"publish_date"`
	Data        []byte    `json:"data"`
	// HeldAt is when the flood guard held it (zero in notes written
	// before it was kept).
	HeldAt time.Time `json:"held_at,omitzero"`
}

// floodGuard holds the new items of a known feed's poll when more than
// FloodMax of them are dated before the newest item already seen. It
// returns how many it held, and the note of the newest date seen, to be
// written with the poll's commit (nil: unchanged): written before, a
// commit that failed would leave the note ahead of what is recorded, and
// the next poll would take the same items for a flood. It costs a note
// read on known feeds' polls with something new only.
func (p *Publisher) floodGuard(ctx context.Context, feedID string, kept []*transform.Payload, d dedupe.Diff, act []dedupe.Action, plan *repostPlan, o FeedOptions) (int, []dedupe.NoteWrite, error) {
	if o.ICal != nil || o.Reposts.FloodMax <= 0 || !o.BackfillSince.IsZero() {
		return 0, nil, nil
	}
	var newest time.Time
	for _, pl := range kept {
		if pl.PublishDate.After(newest) {
			newest = pl.PublishDate
		}
	}
	if !d.Known {
		note, err := newestNoteOf(newest)
		return 0, note, err
	}
	raw, ok, err := p.store.Note(ctx, feedID, newestNote)
	if err != nil {
		return 0, nil, fmt.Errorf("read newest date: %w", err)
	}
	var seenNewest time.Time
	if ok {
		if err := seenNewest.UnmarshalText(raw); err != nil {
			p.log.Warn("newest date note unreadable; replaced", "feed", feedID, "err", err)
		}
	}
	for i, pl := range kept {
		if d.Status[i] != dedupe.StatusNew && pl.PublishDate.After(seenNewest) {
			seenNewest = pl.PublishDate
		}
	}
	var older []int
	for i, pl := range kept {
		// A merge job posts nothing: a repost of another feed's item.
		if act[i] == dedupe.ActionPublish && d.Status[i] == dedupe.StatusNew && !pl.PublishDate.IsZero() && pl.PublishDate.Before(seenNewest) && plan.mergeOf(i) == nil {
			older = append(older, i)
		}
	}
	held := 0
	if len(older) > o.Reposts.FloodMax {
		if err := p.hold(ctx, feedID, kept, older, o); err != nil {
			return 0, nil, err
		}
		for _, i := range older {
			act[i] = dedupe.ActionSeeOnly
		}
		held = len(older)
		p.log.Warn("feed republished its history: new items dated before the newest already seen are held; post them with feedworker release",
			"feed", feedID, "held", held, "newest_seen", seenNewest, "flood_max", o.Reposts.FloodMax)
	}
	// Held items are all older than seenNewest: they never move it.
	if newest.After(seenNewest) {
		note, err := newestNoteOf(newest)
		return held, note, err
	}
	return held, nil, nil
}

// newestNoteOf is the write of the newest date note for t (nil for the
// zero time: nothing dated).
func newestNoteOf(t time.Time) ([]dedupe.NoteWrite, error) {
	if t.IsZero() {
		return nil, nil
	}
	b, err := t.UTC().MarshalText()
	if err != nil {
		return nil, fmt.Errorf("newest date: %w", err)
	}
	return []dedupe.NoteWrite{{Name: newestNote, Data: b}}, nil
}

// hold adds items to the feed's held note, before the commit that records
// them as seen only: a failed commit leaves them new (polled again), never
// recorded without a trace.
func (p *Publisher) hold(ctx context.Context, feedID string, kept []*transform.Payload, idx []int, o FeedOptions) error {
	h, err := p.heldOf(ctx, feedID)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, it := range h.Items {
		have[it.ExternalID] = true
	}
	for _, i := range idx {
		pl := kept[i]
		if have[pl.ExternalID] {
			continue
		}
		data, err := p.encode(pl, o)
		if err != nil {
			return err
		}
		h.Items = append(h.Items, heldItem{ExternalID: pl.ExternalID, Hash: pl.Hash, Type: pl.Type, PublishDate: pl.PublishDate, Data: data, HeldAt: time.Now().UTC()})
	}
	if err := p.saveHeld(ctx, feedID, h); err != nil {
		return err
	}
	return nil
}

func (p *Publisher) heldOf(ctx context.Context, feedID string) (heldItems, error) {
	var h heldItems
	raw, ok, err := p.store.Note(ctx, feedID, heldNote)
	if err != nil {
		return h, fmt.Errorf("read held items: %w", err)
	}
	if ok {
		if err := json.Unmarshal(raw, &h); err != nil {
			return h, fmt.Errorf("read held items: %w", err)
		}
	}
	return h, nil
}

func (p *Publisher) saveHeld(ctx context.Context, feedID string, h heldItems) error {
	var data []byte
	if len(h.Items) > 0 {
		var err error
		if data, err = json.Marshal(h); err != nil {
			return fmt.Errorf("store held items: %w", err)
		}
	}
	if err := p.store.SetNote(ctx, feedID, heldNote, data); err != nil {
		return fmt.Errorf("store held items: %w", err)
	}
	p.setHeldGauge(feedID, len(h.Items))
	return nil
}

// setHeldGauge keeps feedworker_items_held to the feeds holding items: a
// feed with none has no series, as the status page lists none for it.
func (p *Publisher) setHeldGauge(feedID string, n int) {
	if n == 0 {
		p.rm.held.DeleteLabelValues(feedID)
		return
	}
	p.rm.held.WithLabelValues(feedID).Set(float64(n))
}

// Held counts the items the flood guard holds for a feed.
func (p *Publisher) Held(ctx context.Context, feedID string) (int, error) {
	h, err := p.heldOf(ctx, feedID)
	if err != nil {
		return 0, err
	}
	p.setHeldGauge(feedID, len(h.Items))
	return len(h.Items), nil
}

// HeldFeed is one feed's items held by the flood guard.
type HeldFeed struct {
	FeedID string
	Count  int
	// Since is when the earliest of them was held (zero when unknown).
	Since time.Time
}

// heldReads bounds the note reads HeldFeeds runs at once.
const heldReads = 8

// HeldFeeds lists the feeds of feedIDs that hold items, in feedIDs'
// order, reading each feed's held note (at most heldReads at once), and
// sets feedworker_items_held from what it read, so that the gauge and the
// status page agree whichever process held or released the items.
func (p *Publisher) HeldFeeds(ctx context.Context, feedIDs []string) ([]HeldFeed, error) {
	out := make([]HeldFeed, len(feedIDs))
	errs := make([]error, len(feedIDs))
	sem := make(chan struct{}, heldReads)
	var wg sync.WaitGroup
	for i, id := range feedIDs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			h, err := p.heldOf(ctx, id)
			if err != nil {
				errs[i] = fmt.Errorf("feed %s: %w", id, err)
				return
			}
			out[i] = HeldFeed{FeedID: id, Count: len(h.Items)}
			for _, it := range h.Items {
				if !it.HeldAt.IsZero() && (out[i].Since.IsZero() || it.HeldAt.Before(out[i].Since)) {
					out[i].Since = it.HeldAt
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	held := out[:0]
	for _, h := range out {
		p.setHeldGauge(h.FeedID, h.Count)
		if h.Count > 0 {
			held = append(held, h)
		}
	}
	return held, nil
}

// ReleaseMode says what `feedworker release` does with held items.
type ReleaseMode int

// Release modes.
const (
	// ReleaseAll queues every held item.
	ReleaseAll ReleaseMode = iota + 1
	// ReleaseSince queues the held items published at or after a date,
	// and leaves the others recorded as seen.
	ReleaseSince
	// ReleaseDrop leaves every held item recorded as seen.
	ReleaseDrop
)

// ErrNothingHeld is returned by Release for a feed with no held items.
var ErrNothingHeld = errors.New("no items held")

// Release ends the hold of a feed's held items: it queues them (all, or
// those published at or after since) and forgets the hold. It returns how
// many were queued and how many stay recorded as seen. Items queued are
// posted once: a release repeated after a failure finds them queued
// already.
func (p *Publisher) Release(ctx context.Context, feedID string, mode ReleaseMode, since time.Time) (queued, dropped int, err error) {
	h, err := p.heldOf(ctx, feedID)
	if err != nil {
		return 0, 0, fmt.Errorf("release feed %s: %w", feedID, err)
	}
	if len(h.Items) == 0 {
		return 0, 0, fmt.Errorf("release feed %s: %w", feedID, ErrNothingHeld)
	}
	var changes []dedupe.Change
	for _, it := range h.Items {
		if mode == ReleaseAll || mode == ReleaseSince && !it.PublishDate.Before(since) {
			changes = append(changes, dedupe.Change{ExternalID: it.ExternalID, Hash: it.Hash, Type: it.Type, Action: dedupe.ActionBackfill, Data: it.Data})
		}
	}
	if len(changes) > 0 {
		var out []dedupe.Outcome
		err := p.storeOp(ctx, "commit", func(ctx context.Context) (err error) {
			out, err = p.store.Commit(ctx, feedID, changes, nil, time.Now())
			return err
		})
		if err != nil {
			return 0, 0, fmt.Errorf("release feed %s: %w", feedID, err)
		}
		for _, oc := range out {
			if oc == dedupe.OutcomeBackfilled || oc == dedupe.OutcomeNew {
				queued++
			}
		}
		p.wake()
	}
	if err := p.saveHeld(ctx, feedID, heldItems{}); err != nil {
		return queued, 0, fmt.Errorf("release feed %s: %w", feedID, err)
	}
	return queued, len(h.Items) - len(changes), nil
}
