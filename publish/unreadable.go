package publish

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/dedupe"
)

// A 2xx answer whose body the client cannot read (acs.ErrUnreadable) is
// not a transient failure: the service did what was asked, and asking
// again gets the same body. After a POST the item was most probably
// created, so it is looked up once by external_id (the claim's pending
// mark already says it may exist); if that answer cannot be read either,
// the item goes to the dead letters at once, keeping the mark, so that
// `feedworker deadletters retry` looks it up again once the service (or
// the client) is fixed. Other unreadable answers (a look-up alone, the
// category list) count in the run of unresolved failures and go to the
// dead letters after Options.MaxUnresolved attempts in a row.

// runUnreadable names the run of attempts that ended on an unreadable
// answer; it counts together with runUnresolved (see runLength).
const runUnreadable = "unreadable"

// unreadableRelog is how long the ERROR line of one feed and cause stands
// for all the same failures after it; they are logged at debug level (a
// retry) or as warnings (a dead letter) meanwhile.
const unreadableRelog = time.Hour

// UnreadableAnswer sums up the answers of one cause the client could not
// read while delivering one feed's items, for the status page.
type UnreadableAnswer struct {
	FeedID string `json:"feed_id"`
	// Cause is the offending field ("id", "categories.id") or "body".
	Cause string `json:"cause"`
	// Reason is the last such error in full.
	Reason string    `json:"reason"`
	Count  int64     `json:"count"`
	First  time.Time `json:"first"`
	Last   time.Time `json:"last"`

	loggedAt time.Time
}

// unreadables keeps an UnreadableAnswer per feed and cause. Causes are
// field names of the client's types, so the set stays small.
type unreadables struct {
	mu sync.Mutex
	m  map[[2]string]*UnreadableAnswer
}

// note records one unreadable answer and reports whether it deserves an
// ERROR line: the first of its feed and cause, or the first after
// unreadableRelog.
func (u *unreadables) note(feed, cause, reason string, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[[2]string]*UnreadableAnswer{}
	}
	k := [2]string{feed, cause}
	a := u.m[k]
	if a == nil {
		a = &UnreadableAnswer{FeedID: feed, Cause: cause, First: now}
		u.m[k] = a
	}
	a.Count++
	a.Reason, a.Last = reason, now
	if !a.loggedAt.IsZero() && now.Sub(a.loggedAt) < unreadableRelog {
		return false
	}
	a.loggedAt = now
	return true
}

// UnreadableAnswers lists, per feed and cause, the 2xx answers this
// process could not read, ordered by feed and cause.
func (p *Publisher) UnreadableAnswers() []UnreadableAnswer {
	p.unread.mu.Lock()
	defer p.unread.mu.Unlock()
	out := make([]UnreadableAnswer, 0, len(p.unread.m))
	for _, a := range p.unread.m {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b UnreadableAnswer) int {
		return cmp.Or(cmp.Compare(a.FeedID, b.FeedID), cmp.Compare(a.Cause, b.Cause))
	})
	return out
}

// noteUnreadable counts an attempt's unreadable answer, if it had one,
// and logs it at ERROR once per feed and cause. It reports whether the
// attempt's own line should be quieter (see unreadableRelog).
func (p *Publisher) noteUnreadable(log *slog.Logger, feed string, err error) (quiet bool) {
	var de *acs.DecodeError
	if !errors.As(err, &de) {
		return false
	}
	cause := de.Cause()
	p.m.unreadable.WithLabelValues(feed, cause).Inc()
	if !p.unread.note(feed, cause, err.Error(), time.Now()) {
		return true
	}
	log.Error("the service's answers cannot be read; such items are looked up by external_id and, if that answer cannot be read either, dead-lettered (later ones of this feed and cause are logged quietly)",
		"status", de.Status, "field", de.Field, "cause", err)
	return true
}

// unreadableCreate settles a POST whose 2xx answer could not be read: the
// item is looked up once by external_id.
func (p *Publisher) unreadableCreate(ctx context.Context, j job, typ string, err error) result {
	found, ferr := p.api.Find(ctx, j.Key.ExternalID)
	switch {
	case ferr == nil && found.ID != 0:
		typ = cmp.Or(found.Type, typ)
		return result{s: dedupe.Settlement{Kind: dedupe.Delivered, ContentID: found.ID, Type: typ, Hash: j.Hash}, outcome: "created", typ: typ, err: err}
	case ferr == nil:
		// Answered as created, yet not found: the service may not show it
		// yet. Retried with the mark, so the next attempt looks first.
		return p.failed(j, typ, fmt.Errorf("%w; not found by external_id afterwards", err), true)
	case errors.Is(ferr, acs.ErrUnreadable):
		status := 0
		if de := (*acs.DecodeError)(nil); errors.As(err, &de) {
			status = de.Status
		}
		reason := fmt.Sprintf("%v; looking it up by external_id: %v", err, ferr)
		return result{s: dedupe.Settlement{Kind: dedupe.Dead, Status: status, Reason: reason, Ambiguous: true, Run: runUnreadable},
			outcome: "dead_letter", typ: typ, err: fmt.Errorf("%w; looking it up by external_id: %w", err, ferr)}
	}
	return p.failed(j, typ, fmt.Errorf("%w; looking it up by external_id: %w", err, ferr), true)
}
