package feeds

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
)

// PollAll polls every enabled feed once, concurrently within the limits, and
// reports each outcome in id order (for `feedworker once`). It updates the
// feeds' state like scheduled polls do. If Run is polling a feed at the same
// time, PollAll waits for that poll and then polls again.
//
// One goroutine starts the polls as fetch slots free up, so a pass over
// thousands of feeds does not wake thousands of waiters per finished poll.
// With a BatchOwner, a BatchHandler and a BatchStateHandler, the leases,
// validators and poll states of the whole pass are loaded first, in one
// call each.
func (p *Poller) PollAll(ctx context.Context) []PollResult {
	var results []PollResult
	p.PollEach(ctx, func(n int) { results = make([]PollResult, n) },
		func(i int, r PollResult) { results[i] = r })
	return results
}

// PollEach is PollAll handing each outcome to emit as it is known, instead
// of holding them all to the end (each holds its fetch's Result: about 300
// bytes a feed, 6 MB at 20,000 feeds). start is called first with the
// number of feeds, emit then once for each with its index in id order;
// emit is called from several goroutines at once.
func (p *Poller) PollEach(ctx context.Context, start func(n int), emit func(i int, r PollResult)) {
	p.mu.Lock()
	var targets []*feedState
	for _, fs := range p.feeds {
		if fs.enabled {
			targets = append(targets, fs)
		}
	}
	slices.SortFunc(targets, func(a, b *feedState) int { return cmp.Compare(a.cfg.ID, b.cfg.ID) })
	p.mu.Unlock()

	start(len(targets))
	notOwned := p.ownAll(ctx, targets)
	owned := targets
	if len(notOwned) > 0 {
		owned = slices.DeleteFunc(slices.Clone(targets), func(fs *feedState) bool { return notOwned[fs.cfg.ID] })
	}
	p.loadValidators(ctx, owned)
	deferred := p.loadStates(ctx, owned)

	// Feeds still to start, by host, so that a host at its limit is
	// passed over at once rather than feed by feed.
	type waiting struct {
		i  int
		fs *feedState
	}
	queues := map[string][]waiting{}
	var hosts []string
	left := 0
	p.mu.Lock()
	for i, fs := range targets {
		if notOwned[fs.cfg.ID] {
			p.finishNotOwnedLocked(fs, fs.epoch)
			emit(i, PollResult{FeedID: fs.cfg.ID, Skipped: true})
			continue
		}
		if r, ok := deferred[fs]; ok {
			// Its stored state says not now (gone, or a server's wait).
			emit(i, r)
			continue
		}
		if _, ok := queues[fs.host]; !ok {
			hosts = append(hosts, fs.host)
		}
		queues[fs.host] = append(queues[fs.host], waiting{i, fs})
		left++
	}
	p.mu.Unlock()

	var wg sync.WaitGroup
	for left > 0 {
		p.mu.Lock()
		kept := hosts[:0] // hosts with feeds left, in their first order
		for x, h := range hosts {
			if p.inFlight >= p.maxConc {
				kept = append(kept, hosts[x:]...)
				break
			}
			q := queues[h]
			for k := 0; k < len(q) && p.inFlight < p.maxConc && p.hosts[h] < p.perHost; {
				w := q[k]
				fs, id := w.fs, w.fs.cfg.ID
				var j job
				started := false
				switch {
				case fs.removed:
					emit(w.i, PollResult{FeedID: id, Skipped: true})
				case fs.gone:
					emit(w.i, PollResult{FeedID: id, Class: ClassGone, Skipped: true,
						Err: fmt.Errorf("feed %s: %w; not polled until its config changes", id, ErrGone)})
				default:
					if j, started = p.tryStartLocked(fs); !started {
						k++ // Run is polling it: try again when a slot frees
						continue
					}
				}
				if k == 0 {
					q = q[1:]
				} else {
					q = append(q[:k], q[k+1:]...)
				}
				left--
				if started {
					wg.Go(func() { emit(w.i, p.poll(ctx, j)) })
				}
			}
			if len(q) == 0 {
				delete(queues, h)
				continue
			}
			queues[h] = q
			kept = append(kept, h)
		}
		hosts = kept
		released := p.released
		p.mu.Unlock()
		if left == 0 {
			break
		}
		select {
		case <-ctx.Done():
			for _, q := range queues {
				for _, w := range q {
					id := w.fs.cfg.ID
					emit(w.i, PollResult{FeedID: id, Class: Class(ctx.Err()), Skipped: true,
						Err: fmt.Errorf("feed %s: waiting for a fetch slot: %w", id, ctx.Err())})
				}
			}
			left = 0
		case <-released:
		}
	}
	wg.Wait()
}

// ownAll asks a BatchOwner about every target at once and returns the
// feeds it does not own. On an error, or without a BatchOwner, it returns
// nil: each poll asks Own as usual.
func (p *Poller) ownAll(ctx context.Context, targets []*feedState) map[string]bool {
	bo, ok := p.owner.(BatchOwner)
	if !ok || len(targets) == 0 {
		return nil
	}
	ids := make([]string, len(targets))
	for i, fs := range targets {
		ids[i] = fs.cfg.ID
	}
	owned, err := bo.OwnAll(ctx, ids)
	if err != nil {
		p.log.Warn("feed ownership check of the pass failed; asking per feed", "feeds", len(ids), "error", err)
		return nil
	}
	notOwned := map[string]bool{}
	for _, id := range ids {
		if !owned[id] {
			notOwned[id] = true
		}
	}
	return notOwned
}

// loadValidators loads, through a BatchHandler, the validators of the
// targets the poller does not know yet. On an error each poll loads its own.
func (p *Poller) loadValidators(ctx context.Context, targets []*feedState) {
	bh, ok := p.handler.(BatchHandler)
	if !ok {
		return
	}
	wants, ids := p.pending(targets, func(fs *feedState) bool { return fs.validatorsKnown })
	if len(ids) == 0 {
		return
	}
	vs, err := bh.ValidatorsAll(ctx, ids)
	if err != nil {
		p.log.Warn("loading the validators of the pass failed; loading per feed", "feeds", len(ids), "error", err)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range wants {
		fs := w.fs
		// A poll by Run or a reload may have moved the feed on meanwhile.
		if fs.removed || fs.epoch != w.epoch || fs.validatorsKnown || fs.inFlight {
			continue
		}
		fs.validators, fs.validatorsKnown = vs[fs.cfg.ID], true
	}
}

// pendingFeed is a feed a pass loads something for, with the epoch it had
// when asked: a poll or a reload meanwhile makes the answer stale.
type pendingFeed struct {
	fs    *feedState
	epoch uint64
}

// pending lists the targets whose known(fs) is false and that no poll has
// in flight, with their ids, for one batched load.
func (p *Poller) pending(targets []*feedState, known func(*feedState) bool) ([]pendingFeed, []string) {
	var wants []pendingFeed
	var ids []string
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, fs := range targets {
		if !known(fs) && !fs.inFlight {
			wants = append(wants, pendingFeed{fs, fs.epoch})
			ids = append(ids, fs.cfg.ID)
		}
	}
	return wants, ids
}
