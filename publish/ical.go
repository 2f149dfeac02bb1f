package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/transform"
)

// ICalOptions are the settings of an iCalendar feed ([FeedOptions].ICal).
//
// Such a feed's items are occurrences of events, and time matters to
// them: an occurrence that is already over on first sight is recorded as
// seen only (unless InitialPast), and one that disappears from the
// calendar while it is still upcoming is withdrawn: deleted at the API,
// once, and remembered as removed (unless KeepMissing). To notice a
// disappearance, Accept keeps the feed's upcoming occurrences in a store
// note ([dedupe.Notes], name "ical") after each accepted poll.
type ICalOptions struct {
	// Now is the clock the calendar was mapped with, which also decides
	// what is over and what is upcoming here (zero: the time of Accept).
	Now time.Time
	// InitialPast publishes occurrences that are over when first seen.
	InitialPast bool
	// KeepMissing leaves alone an upcoming occurrence that left the
	// calendar (ical.on_cancel: keep).
	KeepMissing bool
	// Until is the end of the window the calendar was expanded in: an
	// occurrence starting later is not expected in the fetch, so its
	// absence means nothing (the window may have shrunk).
	Until time.Time
	// Present are external ids the calendar still has although they are
	// not among the payloads (skipped by a filter, or cancelled with
	// on_cancel keep): they did not disappear.
	Present []string
	// Incomplete says some events of the calendar could not be mapped
	// (a broken RRULE, say): their occurrences are missing from the
	// payloads without having left the calendar, so no disappearance is
	// acted on in this poll.
	Incomplete bool
}

// icalNote is the "ical" note: the upcoming occurrences of the last
// accepted poll, external id → start (unix seconds) and content type.
type icalNote struct {
	V        int                  `json:"v"`
	Upcoming map[string]icalEntry `json:"upcoming"`
}

type icalEntry struct {
	Start int64  `json:"start"`
	Type  string `json:"type"`
}

const icalNoteName = "ical"

// withdrawnHash is the hash of an occurrence that left the calendar: its
// fields are not known any more, and the same every time.
const withdrawnHash = "withdrawn"

// icalOver reports whether an occurrence has ended by now.
func icalOver(pl *transform.Payload, now time.Time) bool {
	if pl.Event == nil {
		return false
	}
	end := pl.Event.End
	if end.IsZero() {
		end = pl.Event.Start
	}
	if pl.Event.AllDay != nil && *pl.Event.AllDay {
		// All-day dates name days: the last one ends a day after it starts.
		end = end.Add(24 * time.Hour)
	}
	return end.Before(now)
}

// icalMissing returns a withdrawn payload for every occurrence of the
// last note that is still upcoming, expected in the window, and absent
// from this poll; and the note this poll leaves.
func (p *Publisher) icalMissing(ctx context.Context, feedID string, kept []*transform.Payload, o *ICalOptions, now time.Time) ([]transform.Payload, []byte, error) {
	next := icalNote{V: 1, Upcoming: map[string]icalEntry{}}
	present := make(map[string]bool, len(kept)+len(o.Present))
	for _, pl := range kept {
		present[pl.ExternalID] = true
		if pl.Event != nil && !pl.Cancelled && pl.Event.Start.After(now) {
			next.Upcoming[pl.ExternalID] = icalEntry{Start: pl.Event.Start.Unix(), Type: pl.Type}
		}
	}
	for _, id := range o.Present {
		present[id] = true
	}
	data, err := json.Marshal(next)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the ical note: %w", err)
	}
	if o.KeepMissing || o.Incomplete {
		return nil, data, nil
	}
	var raw []byte
	var ok bool
	err = p.storeOp(ctx, "note", func(ctx context.Context) (err error) {
		raw, ok, err = p.store.Note(ctx, feedID, icalNoteName)
		return err
	})
	if err != nil || !ok {
		return nil, data, err
	}
	var prev icalNote
	if err := json.Unmarshal(raw, &prev); err != nil || prev.V != 1 {
		p.log.Warn("ical note unreadable; disappeared events are not looked for this time", "feed", feedID, "err", err)
		return nil, data, nil
	}
	if len(present) == 0 && len(prev.Upcoming) > 0 {
		// A calendar that is suddenly empty is more likely a broken
		// export than every event cancelled at once.
		p.log.Warn("calendar has no events now; its upcoming events are not deleted", "feed", feedID, "upcoming_before", len(prev.Upcoming))
		return nil, raw, nil
	}
	var gone []transform.Payload
	for id, e := range prev.Upcoming {
		start := time.Unix(e.Start, 0)
		if present[id] || !start.After(now) || !o.Until.IsZero() && start.After(o.Until) {
			continue
		}
		gone = append(gone, transform.Payload{Type: e.Type, FeedID: feedID, ExternalID: id,
			Title: "(left the calendar)", Cancelled: true, Hash: withdrawnHash,
			Event: &transform.Event{Start: start.UTC()}})
	}
	if len(gone) == 0 && bytes.Equal(raw, data) {
		data = nil // unchanged: no write
	}
	return gone, data, nil
}

// saveICalNote stores the note of an accepted poll. A failure is logged,
// not returned: the items are durable, and a stale note only makes the
// next poll look for disappearances against an older list, which finds
// the same ones again (and withdrawing twice is a no-op).
func (p *Publisher) saveICalNote(ctx context.Context, feedID string, data []byte) {
	if data == nil {
		return
	}
	err := p.storeOp(ctx, "note", func(ctx context.Context) error {
		return p.store.SetNote(ctx, feedID, icalNoteName, data)
	})
	if err != nil {
		p.log.Warn("storing the calendar's upcoming events failed", "feed", feedID, "err", err)
	}
}

// icalAction decides what a new occurrence gets: nothing is posted for
// one that is cancelled, nor, without InitialPast, for one that is over.
func icalAction(pl *transform.Payload, o *ICalOptions, now time.Time) dedupe.Action {
	if pl.Cancelled || !o.InitialPast && icalOver(pl, now) {
		return dedupe.ActionSeeOnly
	}
	return dedupe.ActionPublish
}
