package feeds

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// poll runs one poll of a started job and records its outcome.
func (p *Poller) poll(ctx context.Context, j job) PollResult {
	id := j.cfg.ID
	if p.owner != nil {
		own, err := p.owner.Own(ctx, id)
		if err != nil {
			err = fmt.Errorf("feed %s: ownership check: %w", id, err)
			p.log.Warn("feed ownership check failed; skipping this poll", "feed", id, "error", err)
		}
		if err != nil || !own {
			p.finishNotOwned(j)
			return PollResult{FeedID: id, Skipped: true, Err: err}
		}
	}
	// lost reports, after the poll, that the feed's lease ended during it
	// (the hold's context is done while the poller's is not) or that the
	// commit was refused for it.
	lost := func(error) bool { return false }
	if lh, ok := p.owner.(LeaseHolder); ok {
		hctx, done, err := lh.Hold(ctx, id)
		if err != nil {
			p.finishNotOwned(j)
			return PollResult{FeedID: id, Skipped: true}
		}
		defer done()
		parent := ctx
		ctx = hctx
		lost = func(err error) bool {
			return parent.Err() == nil && (hctx.Err() != nil || errors.Is(err, ErrNotOwned))
		}
	}

	sh, keepsState := p.handler.(StateHandler)
	if keepsState && !j.stateKnown {
		url, skip := p.loadState(ctx, sh, j)
		if skip != nil {
			return *skip
		}
		j.url, j.stateKnown = url, true
	}

	v, loaded := j.validators, false
	if !j.known {
		var err error
		if v, err = p.handler.Validators(ctx, id); err != nil {
			err = fmt.Errorf("feed %s: load validators: %w", id, &HandlerError{Err: err})
			p.finish(j, nil, err, false, 0)
			return PollResult{FeedID: id, Class: ClassStore, Err: err}
		}
		loaded = true
		j.validators = v
	}

	start := time.Now()
	res, err := p.fetcher.Fetch(ctx, j.url, v)
	elapsed := time.Since(start)
	if err == nil && !res.NotModified {
		if herr := p.handler.Handle(ctx, j.cfg, res); herr != nil {
			err = fmt.Errorf("feed %s: %w", id, &HandlerError{Err: herr})
		}
	}
	if lost(err) {
		// Whatever was fetched is dropped (nothing was committed): the
		// replica that holds the feed now polls it.
		p.log.Info("feed lease lost during the poll; its result is dropped", "feed", id, "cause", context.Cause(ctx), "error", err)
		p.finishNotOwned(j)
		return PollResult{FeedID: id, Skipped: true, Err: err}
	}
	class, st := p.finish(j, res, err, loaded, elapsed)
	if st != nil && keepsState {
		p.saveState(ctx, sh, j, *st)
	}
	p.observe(j, start, elapsed, class, v, res, err)
	if res != nil && (res.Feed != nil || res.Calendar != nil) {
		r := *res
		r.Feed, r.Calendar = nil, nil
		res = &r
	}
	return PollResult{FeedID: id, Class: class, Err: err, Result: res}
}

// releaseLocked frees the job's fetch slots and wakes whoever waits for one.
func (p *Poller) releaseLocked(j job) {
	j.fs.inFlight = false
	p.inFlight--
	if p.hosts[j.host]--; p.hosts[j.host] <= 0 {
		delete(p.hosts, j.host)
	}
	close(p.released)
	p.released = make(chan struct{})
	p.nudge()
}

func (p *Poller) finishNotOwned(j job) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(j)
	p.finishNotOwnedLocked(j.fs, j.epoch)
}

// finishNotOwnedLocked records that another replica owns fs.
func (p *Poller) finishNotOwnedLocked(fs *feedState, epoch uint64) {
	if fs.removed || fs.epoch != epoch {
		return
	}
	// Another replica may update the stored validators and poll state
	// meanwhile; reload them if this replica gets the feed back.
	if !fs.freshURL {
		fs.validatorsKnown = false
	}
	fs.stateKnown = false
	fs.notOwned = true
	fs.next = p.sched.Next(time.Now(), fs.interval, Outcome{}, p.rnd)
	p.log.Debug("feed owned by another replica; poll skipped", "feed", fs.cfg.ID, "next_poll", fs.next)
}

// finish records a poll's outcome: metrics, state, next poll time, logs.
// loaded says the validators in j were just read from the handler. It
// returns the result class and, when the feed's stored poll state must
// change, the new state to store.
func (p *Poller) finish(j job, res *Result, err error, loaded bool, elapsed time.Duration) (string, *PollState) {
	id := j.cfg.ID
	class := Class(err)
	if err == nil && res != nil && res.NotModified {
		class = ClassNotModified
	}
	if err == nil && res != nil && res.Partial != "" {
		class = ClassPartial
	}
	fetched := res != nil || class != ClassStore
	// A partial document delivered items: no failure backoff, but the empty
	// validators it carries make the next poll fetch it whole.
	success := class == ClassOK || class == ClassNotModified || class == ClassPartial
	now := time.Now()

	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(j)
	fs := j.fs
	if fs.removed {
		p.log.Debug("poll of removed feed finished", "feed", id, "result", class)
		return class, nil
	}
	p.metrics.polls.WithLabelValues(id, class).Inc()
	if fetched {
		p.metrics.duration.WithLabelValues(class).Observe(elapsed.Seconds())
	}
	if res != nil && res.Bytes > 0 {
		p.metrics.bytes.WithLabelValues(id).Add(float64(res.Bytes))
	}
	if success {
		p.metrics.lastSuccess.WithLabelValues(id).Set(float64(now.UnixNano()) / 1e9)
	}
	if fs.epoch != j.epoch {
		// The URL changed while this poll ran: its result is about the old
		// URL, and Update already scheduled the new one.
		return class, nil
	}

	fs.lastPoll, fs.lastClass, fs.notOwned = now, class, false
	fs.lastErr = ""
	if err != nil {
		fs.lastErr = err.Error()
	}
	if loaded {
		fs.validators, fs.validatorsKnown = j.validators, true
	}
	items := res.ItemCount()
	switch {
	case class == ClassOK, class == ClassPartial:
		// Only now are the new validators safe: the body was read in full,
		// parsed, and the handler made the items durable.
		fs.validators, fs.validatorsKnown, fs.freshURL = res.Validators, true, false
		fs.items += int64(items)
		fs.ttl = max(feedHint(res.Feed), res.MinInterval)
		fs.setWarnings(documentWarnings(res), fs.warnings())
	case class == ClassStore && !fs.freshURL:
		// The store may or may not hold what Handle tried to write; ask it.
		fs.validatorsKnown = false
	}
	// The gauges count over every feed; recount them only when this poll
	// changed what they count, or a pass over N feeds costs N².
	gauges := false
	if res != nil && (success || class == ClassGone) {
		moved := fs.movedTo
		switch {
		case res.MovedTo != "":
			moved = res.MovedTo
		case j.url == j.cfg.URL:
			// The configured URL answered without a permanent redirect.
			moved = ""
		}
		// Otherwise the poll went to where the feed moved, which answered
		// itself: it stays moved until the config names the new URL.
		gauges = fs.movedTo != moved
		fs.movedTo = moved
	}

	o := Outcome{}
	if success {
		fs.failures = 0
		fs.lastOK = now
		o.Hint = fs.ttl
		if res != nil {
			o.Hint = max(res.Hint, fs.ttl)
		}
	} else {
		fs.failures++
		o.Failures = fs.failures
		var ra *RetryAfterError
		if errors.As(err, &ra) {
			o.RetryAfter = ra.RetryAfter
		}
	}
	fs.outcome = o
	if class == ClassGone {
		fs.gone = true
		p.log.Warn("feed is gone (410); not polled until its config changes", "feed", id, "error", err)
		gauges = true
	} else {
		fs.next = p.sched.Next(now, fs.interval, o, p.rnd)
	}
	if gauges {
		p.updateGaugesLocked()
	}
	p.logWarningsLocked(fs)
	var save *PollState
	if fs.stateKnown {
		if st := fs.stateLocked(); !st.equal(fs.savedState()) {
			fs.setSaved(st)
			save = &st
		}
	}
	if class == ClassGone {
		return class, save
	}

	switch {
	case class == ClassPartial:
		p.log.Debug("feed document is incomplete; the items before the cut were handled, validators not kept",
			"feed", id, "result", class, "items", items, "cause", res.Partial, "next_poll", fs.next)
	case success:
		var n int64
		if res != nil {
			n = res.Bytes
		}
		p.log.Debug("poll", "feed", id, "result", class, "duration", elapsed, "bytes", n, "items", items,
			"next_poll", fs.next)
	case class == ClassStore:
		p.log.Error("poll failed in the handler; validators kept", "feed", id, "result", class,
			"error", err, "failures", fs.failures, "next_poll", fs.next)
	default:
		p.log.Warn("poll failed", "feed", id, "result", class, "error", err,
			"failures", fs.failures, "next_poll", fs.next)
	}
	return class, save
}

// documentWarnings are the warnings a handled document raised: the
// fetch's (cut short, charset guessed) and the handler's.
func documentWarnings(res *Result) []Warning {
	ws := slices.Clone(res.Warnings)
	if res.Partial != "" {
		ws = append(ws, Warning{Code: WarnPartial,
			Message: "the document is incomplete (" + res.Partial + "); the items before the cut were handled"})
	}
	if res.Sniffed != "" {
		ws = append(ws, Warning{Code: WarnCharset,
			Message: "the document declares no encoding and is not UTF-8; decoded as " + res.Sniffed})
	}
	return normWarnings(ws)
}

// logWarningsLocked logs the warnings that appeared and cleared since the
// last poll, once each, and keeps the ones in force.
func (p *Poller) logWarningsLocked(fs *feedState) {
	cur := fs.currentWarningsLocked()
	appeared, cleared := warningChanges(fs.warnings(), cur)
	for _, w := range appeared {
		p.log.Warn("feed warning", "feed", fs.cfg.ID, "warning", w.Code, "message", w.Message)
	}
	for _, w := range cleared {
		p.log.Info("feed warning cleared", "feed", fs.cfg.ID, "warning", w.Code)
	}
	fs.setWarnings(fs.docWarnings(), cur)
}
