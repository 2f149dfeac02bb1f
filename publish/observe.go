package publish

import (
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/transform"
)

// Observer is told what happened to each item, for an operator's history
// (see package history). Its methods run on the goroutines of Accept and
// of the deliveries (Delivered once the outcome is recorded in the store):
// they must return at once and cannot fail either.
type Observer interface {
	// Accepted is told at what time Accept began to record the items:
	// before they could be claimed, so that it comes before any delivery
	// of theirs, which a sender may make before Accepted is called.
	Accepted(feedID string, at time.Time, items []Accepted)
	Delivered(d Delivery)
}

// What Accept did with an item.
const (
	FateQueued    = "queued"    // new: queued for its first send
	FateChanged   = "changed"   // changed: an update is queued
	FateUnchanged = "unchanged" // nothing to send (same version, or a removed item left alone)
	FateSeenOnly  = "seen_only" // recorded without publishing (first sight, beyond initial_items)
	FateDropped   = "dropped"   // unusable (Reason says why)
	FateRepost    = "repost"    // a known story under a new identity (Reason: of which content, matched how)
)

// Accepted is one item of an accepted poll and its fate.
type Accepted struct {
	Payload *transform.Payload
	Fate    string
	Reason  string
}

// Delivery is what one delivery attempt came to.
type Delivery struct {
	Key dedupe.Key
	At  time.Time
	// Outcome is created, updated, recovered, retry, dead_letter or removed;
	// a reconcile that finds the item at the API reports "reconciled".
	Outcome   string
	ContentID int64
	// Attempt counts this one (1 for the first).
	Attempt int
	// Next is when a retry is due.
	Next time.Time
	// Status is the API's HTTP status (0: none) and Reason its answer or
	// the error.
	Status int
	Reason string
}

// GateUntil is when the API's last Retry-After ends: every call waits
// until then (zero or past: the gate is open).
func (p *Publisher) GateUntil() time.Time {
	p.gate.mu.Lock()
	defer p.gate.mu.Unlock()
	return p.gate.until
}

// observeAccepted reports the fates of one Accept: dropped items, and for
// each kept one what its diff status, action and outcome made of it (out
// holds an outcome per item with an action, in order; nil when nothing
// was committed).
func (p *Publisher) observeAccepted(feedID string, at time.Time, kept []*transform.Payload, dropped []Accepted, d dedupe.Diff, act []dedupe.Action, out []dedupe.Outcome, plan *repostPlan) {
	if p.o.Observer == nil {
		return
	}
	items := make([]Accepted, 0, len(kept)+len(dropped))
	items = append(items, dropped...)
	next := 0
	for i, pl := range kept {
		fate := FateUnchanged
		if i < len(d.Status) && d.Status[i] == dedupe.StatusSkipped {
			fate = FateSeenOnly
		}
		if i < len(act) && act[i] != 0 && next < len(out) {
			switch out[next] {
			case dedupe.OutcomeNew, dedupe.OutcomeBackfilled:
				fate = FateQueued
			case dedupe.OutcomeUpdated:
				fate = FateChanged
			case dedupe.OutcomeSeen:
				fate = FateSeenOnly
			}
			next++
		}
		a := Accepted{Payload: pl, Fate: fate}
		if m, ok := plan.match(i); ok && m.by != matchIdentity {
			a.Fate, a.Reason = FateRepost, m.reason()
		}
		items = append(items, a)
	}
	p.o.Observer.Accepted(feedID, at, items)
}

// observeDelivery reports one delivery attempt's result.
func (p *Publisher) observeDelivery(j job, r result) {
	if p.o.Observer == nil {
		return
	}
	d := Delivery{Key: j.Key, At: time.Now(), Outcome: r.outcome, ContentID: r.s.ContentID, Attempt: j.Attempts + 1,
		Status: r.s.Status, Reason: r.s.Reason}
	if r.outcome == "retry" {
		d.Next = r.s.Next
	}
	if d.Reason == "" && r.err != nil {
		d.Reason = r.err.Error()
	}
	p.o.Observer.Delivered(d)
}
