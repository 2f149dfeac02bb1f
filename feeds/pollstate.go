package feeds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/feedworker/feedworker/config"
)

// PollState is what the poller keeps of a feed in the store, so that the
// next process (or the replica that takes the feed's lease) honours what
// this one promised the feed's server: see dedupe.PollStates.
type PollState struct {
	// URL is the configured URL the state belongs to; a state of another
	// URL is stale and ignored.
	URL string
	// NotBefore is the earliest next poll after failures: the end of the
	// backoff, or of a Retry-After.
	NotBefore time.Time
	Failures  int
	// GoneConfig is the Fingerprint of the config that met a 410.
	GoneConfig string
	// MovedTo is the target of a permanent redirect.
	MovedTo  string
	Warnings []Warning
}

// StateHandler is a Handler that keeps poll states. With one, the poller
// reads a feed's state before its first poll (and again after it got the
// feed's lease back) and writes it whenever it changes.
type StateHandler interface {
	Handler
	// PollState returns the stored state; ok is false when there is none.
	PollState(ctx context.Context, feedID string) (s PollState, ok bool, err error)
	// SetPollState stores the state; the zero state deletes it.
	SetPollState(ctx context.Context, feedID string, s PollState) error
}

// IsZero reports whether s says nothing a new process would need.
func (s PollState) IsZero() bool {
	return s.URL == "" && s.NotBefore.IsZero() && s.Failures == 0 && s.GoneConfig == "" && s.MovedTo == "" &&
		len(s.Warnings) == 0
}

// equal compares two states, times by instant.
func (s PollState) equal(o PollState) bool {
	return s.URL == o.URL && s.NotBefore.Equal(o.NotBefore) && s.Failures == o.Failures &&
		s.GoneConfig == o.GoneConfig && s.MovedTo == o.MovedTo && slices.Equal(s.Warnings, o.Warnings)
}

// Fingerprint identifies a feed's config: a 410 holds until it changes.
func Fingerprint(c config.Feed) string {
	b, err := json.Marshal(c)
	if err != nil {
		// Every config.Feed marshals; an id alone still tells feeds apart.
		b = []byte(c.ID + "\x00" + c.URL)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// fetchURLLocked is the URL a poll of fs fetches: where the feed moved,
// when moves are followed, else the configured one.
func (p *Poller) fetchURLLocked(fs *feedState) string {
	if p.follow && fs.movedTo != "" {
		return fs.movedTo
	}
	return fs.cfg.URL
}

// savedState is the state last read from or written to the store.
func (fs *feedState) savedState() PollState {
	if fs.saved == nil {
		return PollState{}
	}
	return *fs.saved
}

// setSaved records st as the store's state of the feed.
func (fs *feedState) setSaved(st PollState) {
	if st.IsZero() {
		fs.saved = nil
		return
	}
	fs.saved = &st
}

// currentWarningsLocked are the document's warnings and, for a moved feed,
// the moved one.
func (fs *feedState) currentWarningsLocked() []Warning {
	ws := slices.Clone(fs.docWarnings())
	if fs.movedTo != "" {
		ws = append(ws, Warning{Code: WarnMoved,
			Message: "moved permanently to " + config.RedactURL(fs.movedTo) + "; update the feed's url in the config"})
	}
	return normWarnings(ws)
}

// stateLocked is what the store should hold for fs: the zero state for a
// healthy feed, so that most feeds cost no write.
func (fs *feedState) stateLocked() PollState {
	s := PollState{Failures: fs.failures, MovedTo: fs.movedTo, Warnings: fs.currentWarningsLocked()}
	if fs.failures > 0 {
		s.NotBefore = fs.next
	}
	if fs.gone {
		s.GoneConfig = Fingerprint(*fs.cfg)
	}
	if !s.IsZero() {
		s.URL = fs.cfg.URL
	}
	return s
}

// BatchStateHandler is a StateHandler that reads many poll states at once:
// PollAll loads those of every feed it does not know yet in one call.
type BatchStateHandler interface {
	StateHandler
	// PollStatesAll returns the stored states; a feed missing from the map
	// has none.
	PollStatesAll(ctx context.Context, feedIDs []string) (map[string]PollState, error)
}

// loadState reads a feed's stored state before its first poll by this
// process. It returns the URL to fetch, or a PollResult when the poll must
// not happen now (the job is then finished): the state says the feed is
// gone under this config, or its server asked to wait beyond now.
func (p *Poller) loadState(ctx context.Context, sh StateHandler, j job) (string, *PollResult) {
	id := j.cfg.ID
	st, found, err := sh.PollState(ctx, id)
	if err != nil {
		err = fmt.Errorf("feed %s: load poll state: %w", id, &HandlerError{Err: err})
		p.finish(j, nil, err, false, 0)
		return "", &PollResult{FeedID: id, Class: ClassStore, Err: err}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fs := j.fs
	if fs.removed || fs.epoch != j.epoch {
		// Removed or moved by the config meanwhile: Update rescheduled it.
		p.releaseLocked(j)
		return "", &PollResult{FeedID: id, Skipped: true}
	}
	if skip := p.applyStateLocked(fs, st, found, time.Now()); skip != nil {
		p.releaseLocked(j)
		return "", skip
	}
	return p.fetchURLLocked(fs), nil
}

// loadStates reads, through a BatchStateHandler, the stored states of the
// targets the poller does not know yet, and returns the feeds that must
// not be polled now. On an error each poll loads its own.
func (p *Poller) loadStates(ctx context.Context, targets []*feedState) map[*feedState]PollResult {
	bh, ok := p.handler.(BatchStateHandler)
	if !ok {
		return nil
	}
	wants, ids := p.pending(targets, func(fs *feedState) bool { return fs.stateKnown })
	if len(ids) == 0 {
		return nil
	}
	states, err := bh.PollStatesAll(ctx, ids)
	if err != nil {
		p.log.Warn("loading the poll states of the pass failed; loading per feed", "feeds", len(ids), "error", err)
		return nil
	}
	skips := map[*feedState]PollResult{}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range wants {
		fs := w.fs
		// A poll by Run or a reload may have moved the feed on meanwhile.
		if fs.removed || fs.epoch != w.epoch || fs.stateKnown || fs.inFlight {
			continue
		}
		st, found := states[fs.cfg.ID]
		if skip := p.applyStateLocked(fs, st, found, now); skip != nil {
			skips[fs] = *skip
		}
	}
	return skips
}

// applyStateLocked takes a feed's stored state into its memory, and
// returns why it must not be polled now, if it must not.
func (p *Poller) applyStateLocked(fs *feedState, st PollState, found bool, now time.Time) *PollResult {
	id := fs.cfg.ID
	fs.stateKnown = true
	fs.setSaved(st)
	if !found || st.URL != fs.cfg.URL {
		// None, or the state of a URL the config no longer names.
		return nil
	}
	fs.failures = st.Failures
	fs.outcome = Outcome{Failures: st.Failures}
	fs.movedTo = st.MovedTo
	cur := normWarnings(st.Warnings)
	fs.setWarnings(slices.DeleteFunc(slices.Clone(cur), func(w Warning) bool { return w.Code == WarnMoved }), cur)
	defer p.updateGaugesLocked()
	switch {
	case st.GoneConfig != "" && st.GoneConfig == Fingerprint(*fs.cfg):
		fs.gone = true
		p.log.Info("feed is gone (410, remembered by the store); not polled until its config changes", "feed", id)
		return &PollResult{FeedID: id, Class: ClassGone, Skipped: true,
			Err: fmt.Errorf("feed %s: %w; not polled until its config changes", id, ErrGone)}
	case st.NotBefore.After(now):
		fs.next = st.NotBefore
		p.log.Info("feed's next poll kept from the store: its server asked to wait, or it is backing off",
			"feed", id, "failures", st.Failures, "next_poll", st.NotBefore)
		return &PollResult{FeedID: id, Skipped: true,
			Err: fmt.Errorf("feed %s: not polled before %s: its server asked to wait, or it is backing off after %d failures",
				id, st.NotBefore.Format(time.RFC3339), st.Failures)}
	}
	return nil
}

// saveState writes a poll's new state; on failure the next poll tries again.
func (p *Poller) saveState(ctx context.Context, sh StateHandler, j job, st PollState) {
	err := sh.SetPollState(ctx, j.cfg.ID, st)
	if err == nil {
		return
	}
	p.log.Warn("storing the feed's poll state failed; a restart may poll it early", "feed", j.cfg.ID, "error", err)
	p.mu.Lock()
	defer p.mu.Unlock()
	if j.fs.epoch == j.epoch && j.fs.savedState().equal(st) {
		j.fs.setSaved(PollState{Failures: -1}) // unlike any state: write again next time
	}
}
