package feeds

import "time"

// Refetch forgets every feed's validators and schedules each feed again
// within its interval (as a new feed is), so that every feed is fetched in
// full, without a conditional GET, until a fetch of it is handled. The
// worker calls it when the store lost its data: what the store forgot
// (items queued but not yet delivered, say) is then seen again, even for a
// feed that would otherwise answer 304 forever. A poll in flight finishes,
// but its result no longer sets the feed's validators.
func (p *Poller) Refetch() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for _, fs := range p.feeds {
		// As after a change of URL: the store's validators, if any, are
		// not to be trusted, and a poll already running is about before.
		fs.epoch++
		fs.validators, fs.validatorsKnown, fs.freshURL = Validators{}, true, true
		// The stored poll state went with the rest: write it again at
		// the next poll, whatever it is (a gone feed stays gone).
		fs.setSaved(PollState{Failures: -1})
		if fs.scheduled() {
			fs.next = p.sched.First(now, fs.interval, p.rnd)
		}
	}
	p.nudge()
}
