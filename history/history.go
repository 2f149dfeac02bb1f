// Package history remembers, per feed, what happened to the last items the
// worker saw and to its last polls, so an operator can answer "why didn't
// my item appear?". It is diagnostics, never a source of truth: writes are
// best effort and bounded (the newest N items and N polls per feed), and
// nothing in the pipeline reads it to decide anything.
//
// Two stores share one contract: Redis (a hash of item records, a sorted
// set ordering them by last activity and a capped list of polls per feed,
// all under one hash tag per feed so they are legal on Redis Cluster,
// merged by one Lua script per feed) and bbolt (a bucket per feed in the
// embedded store's file).
package history

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Kind is what happened to an item once.
type Kind string

// The fates of an item. Accept-time kinds come from a poll; delivery kinds
// from the publisher; Reconciled from a reconcile against the API.
const (
	Queued     Kind = "queued"      // new: waiting in the outbox for its first send
	Changed    Kind = "changed"     // changed since the last accepted version: an update is queued (Fields)
	Unchanged  Kind = "unchanged"   // same as the last accepted version: nothing to send
	SeenOnly   Kind = "seen_only"   // first sight of the feed, older than its initial_items: recorded, not published
	Filtered   Kind = "filtered"    // a filter or rule dropped it (Detail names it)
	MapFailed  Kind = "map_failed"  // the mapping failed or the item was unusable (Detail says why)
	Published  Kind = "published"   // created as ContentID
	Updated    Kind = "updated"     // updated at ContentID
	Recovered  Kind = "recovered"   // found at the API by external id after an ambiguous send, as ContentID
	Retrying   Kind = "retrying"    // a send failed; waiting in the outbox (Attempt, Next, Status, Detail)
	DeadLetter Kind = "dead_letter" // the API refused it for good (Status, Detail: its answer)
	Removed    Kind = "removed"     // deleted on the service; left alone
	Reconciled Kind = "reconciled"  // found at the API by a reconcile (ContentID)
	Repost     Kind = "repost"      // a known story under a new identity: not posted (Detail: of which content, matched how)
)

// Failed reports whether the kind is a failed send (the chart counts them).
func (k Kind) Failed() bool { return k == Retrying || k == DeadLetter }

// Event is one fate. Repeats of the same fate in a row are one event with
// a count, so an item seen unchanged on every poll costs one event.
type Event struct {
	Kind Kind `json:"k"`
	// At is when it happened (the last time, for a repeat), Unix ms.
	At int64 `json:"t"`
	// Count is how many times in a row it happened (0 means once).
	Count     int   `json:"n,omitempty"`
	ContentID int64 `json:"id,omitempty"`
	Attempt   int   `json:"a,omitempty"`
	// Next is when a retry is due, Unix ms.
	Next   int64 `json:"nx,omitempty"`
	Status int   `json:"s,omitempty"`
	// Detail is the rule that filtered, why mapping failed, the last error
	// or the API's answer.
	Detail string `json:"d,omitempty"`
	// Fields name what changed, for Changed (filled by the store from the
	// item's field digests).
	Fields []string `json:"f,omitempty"`
}

// Time is At as a time.
func (e Event) Time() time.Time { return fromMS(e.At) }

// NextTime is Next as a time (zero when unset).
func (e Event) NextTime() time.Time { return fromMS(e.Next) }

// Times is how many times the event happened in a row.
func (e Event) Times() int { return max(e.Count, 1) }

// Item is what is remembered of one item of a feed.
type Item struct {
	// ID is the item's external id; items that never got one (filtered or
	// failed before mapping) are keyed by "guid:", "link:" or "title:".
	ID    string `json:"id"`
	Title string `json:"ti,omitempty"`
	Link  string `json:"l,omitempty"`
	GUID  string `json:"g,omitempty"`
	// FirstSeen and LastSeen are when a poll first and last found the item
	// in the feed, Unix ms.
	FirstSeen int64 `json:"f0"`
	LastSeen  int64 `json:"f1,omitempty"`
	// Digest is a short hash per group of mapped fields, to name what
	// changed: the stored form of a Digest (see Digest.Map).
	Digest map[string]string `json:"dg,omitempty"`
	// Events are the item's fates, oldest first, the last MaxEvents.
	Events []Event `json:"ev"`
}

// Last is the newest fate.
func (it Item) Last() Event {
	if len(it.Events) == 0 {
		return Event{}
	}
	return it.Events[len(it.Events)-1]
}

// ContentID is the content id of the newest fate that has one.
func (it Item) ContentID() int64 {
	for _, e := range slices.Backward(it.Events) {
		if e.ContentID != 0 {
			return e.ContentID
		}
	}
	return 0
}

// FirstSeenTime and LastSeenTime are the seen times as times.
func (it Item) FirstSeenTime() time.Time { return fromMS(it.FirstSeen) }

// LastSeenTime is LastSeen as a time.
func (it Item) LastSeenTime() time.Time { return fromMS(it.LastSeen) }

// activity is the item's newest time: what orders and bounds the records.
func (it Item) activity() int64 {
	return max(it.LastSeen, it.FirstSeen, it.Last().At)
}

// Matches reports whether q (lower case) is in the item's id, title, link
// or GUID.
func (it Item) Matches(q string) bool {
	for _, s := range []string{it.ID, it.Title, it.Link, it.GUID} {
		if strings.Contains(strings.ToLower(s), q) {
			return true
		}
	}
	return false
}

// Update is one fate to record for one item, with what is known of it.
type Update struct {
	ID    string `json:"id"`
	Title string `json:"ti,omitempty"`
	Link  string `json:"l,omitempty"`
	GUID  string `json:"g,omitempty"`
	// Seen is set when a poll found the item (it moves LastSeen).
	Seen   bool   `json:"seen,omitempty"`
	Digest Digest `json:"dg,omitzero"`
	Event  Event  `json:"e"`
}

// Poll is one poll of a feed.
type Poll struct {
	// At is when it started, Unix ms.
	At int64 `json:"t"`
	// Result is the poll's class (ok, not_modified, error_http, ...).
	Result     string `json:"r"`
	StatusCode int    `json:"s,omitempty"`
	DurationMS int64  `json:"ms"`
	Bytes      int64  `json:"b,omitempty"`
	Items      int    `json:"i,omitempty"`
	New        int    `json:"new,omitempty"`
	Changed    int    `json:"chg,omitempty"`
	Unchanged  int    `json:"unc,omitempty"`
	Filtered   int    `json:"fil,omitempty"`
	Failed     int    `json:"fail,omitempty"`
	// ETag and LastModified are the validators the request sent.
	ETag         string `json:"et,omitempty"`
	LastModified string `json:"lm,omitempty"`
	Error        string `json:"err,omitempty"`
}

// Time is At as a time.
func (p Poll) Time() time.Time { return fromMS(p.At) }

// OK reports whether the poll fetched a document that was handled.
func (p Poll) OK() bool { return p.Result == "ok" }

// NotModified reports a 304.
func (p Poll) NotModified() bool { return p.Result == "not_modified" }

// Batch is what to write for one feed.
type Batch struct {
	Feed  string
	Polls []Poll
	Items []Update
}

// Hour is what the whole worker did in one hour.
type Hour struct {
	// Start is the hour's start, Unix ms.
	Start     int64 `json:"start"`
	Published int   `json:"published"`
	Updated   int   `json:"updated"`
	Failed    int   `json:"failed"`
	// Outbox is the last outbox depth sampled in the hour; -1 when none was.
	Outbox int `json:"outbox"`
}

// Found is an item found by a search.
type Found struct {
	Feed string
	Item Item
}

// Feed is a feed's history, newest first.
type Feed struct {
	Items []Item
	Polls []Poll
}

// Store keeps the history.
type Store interface {
	// Write records the batches, the hour counts and the outbox sample
	// (negative: none) in one round trip, keeping each feed within the
	// limits.
	Write(ctx context.Context, batches []Batch, hours map[int64]Hour, outbox int, now time.Time) error
	// Feed returns a feed's items (last activity first) and polls (newest
	// first).
	Feed(ctx context.Context, feedID string) (Feed, error)
	// Polls returns the last n polls of each feed, newest first.
	Polls(ctx context.Context, feedIDs []string, n int) (map[string][]Poll, error)
	// Find returns up to limit items of the feeds whose id, title, link or
	// GUID contains q (case-insensitive).
	Find(ctx context.Context, feedIDs []string, q string, limit int) ([]Found, error)
	// Hours returns the hours from since to now, oldest first, with zero
	// counts for hours nothing was recorded in.
	Hours(ctx context.Context, since, now time.Time) ([]Hour, error)
}

// Limits bound what is kept per feed.
type Limits struct {
	// Items and Polls kept per feed (default 200 each).
	Items int
	Polls int
	// Events kept per item (default MaxEvents).
	Events int
	// TTL is how long Redis keeps a feed's history after its last write
	// (default DefaultTTL), so that of a removed feed goes by itself.
	TTL time.Duration
}

// Defaults for Limits.
const (
	DefaultItems = 200
	MaxEvents    = 12
	DefaultTTL   = 90 * 24 * time.Hour
	// hoursKept is how long the hourly counts live (the chart shows 24).
	hoursKept = 48 * time.Hour
)

func (l Limits) withDefaults() Limits {
	if l.Items <= 0 {
		l.Items = DefaultItems
	}
	if l.Polls <= 0 {
		l.Polls = l.Items
	}
	if l.Events <= 0 {
		l.Events = MaxEvents
	}
	if l.TTL <= 0 {
		l.TTL = DefaultTTL
	}
	return l
}

// merge applies u's facts and event to cur (nil: a new record) and returns
// the record; the digest, and the fields a Changed event names, are
// record.merge's (bolt.go), which calls it. The Redis store's Lua script
// does the same; the contract test holds them to it.
func merge(cur *Item, u Update, maxEvents int) *Item {
	rec := cur
	if rec == nil {
		rec = &Item{ID: u.ID, FirstSeen: u.Event.At}
	}
	if u.Title != "" {
		rec.Title = u.Title
	}
	if u.Link != "" {
		rec.Link = u.Link
	}
	if u.GUID != "" {
		rec.GUID = u.GUID
	}
	if u.Seen && u.Event.At > rec.LastSeen {
		rec.LastSeen = u.Event.At
	}
	e := u.Event
	if n := len(rec.Events); n > 0 && same(rec.Events[n-1], e) {
		last := &rec.Events[n-1]
		last.Count = last.Times() + 1
		last.At = e.At
		last.Next = e.Next
		return rec
	}
	rec.Events = append(rec.Events, e)
	if over := len(rec.Events) - maxEvents; over > 0 {
		rec.Events = slices.Delete(rec.Events, 0, over)
	}
	return rec
}

// same reports whether e repeats last: the same fate with the same facts.
func same(last, e Event) bool {
	return last.Kind == e.Kind && last.Detail == e.Detail && last.ContentID == e.ContentID &&
		last.Status == e.Status && last.Attempt == e.Attempt && len(e.Fields) == 0 && len(last.Fields) == 0
}

// hourOf is the start of t's hour, Unix ms.
func hourOf(t time.Time) int64 { return t.Truncate(time.Hour).UnixMilli() }

func fromMS(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// fillHours returns one Hour per hour from since to now, from what is
// stored (by start).
func fillHours(stored map[int64]Hour, since, now time.Time) []Hour {
	var out []Hour
	for h := hourOf(since); h <= hourOf(now); h += time.Hour.Milliseconds() {
		hr, ok := stored[h]
		if !ok {
			hr = Hour{Start: h, Outbox: -1}
		}
		out = append(out, hr)
	}
	return out
}
