package feeds

import (
	"errors"
	"fmt"
	"time"
)

// PollObserver is told about every poll that fetched (or tried to), for an
// operator's history of the feed. It is called on the poll's goroutine and
// must not block.
type PollObserver interface {
	Polled(feedID string, r PollRecord)
}

// PollRecord is what one poll did.
type PollRecord struct {
	Start    time.Time
	Duration time.Duration
	// Class is the result class (see Class).
	Class string
	// StatusCode is the HTTP status of the answer (0: none, or a file URL).
	StatusCode int
	Bytes      int64
	// Items is how many items the document had (0 for a 304 or an error).
	Items int
	// Sent are the validators the request carried.
	Sent Validators
	Err  error
}

// ErrNotScheduled is returned by PollNow for a feed that is not polled:
// unknown, disabled or gone.
var ErrNotScheduled = errors.New("feed is not scheduled")

// PollNow makes a feed due at once: Run polls it as soon as a slot is free
// (a poll already in flight counts). With leases, the replica that owns the
// feed polls it; another one skips it.
func (p *Poller) PollNow(feedID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	fs, ok := p.feeds[feedID]
	if !ok || !fs.scheduled() {
		return fmt.Errorf("poll %s now: %w", feedID, ErrNotScheduled)
	}
	if !fs.inFlight {
		fs.next = time.Now()
	}
	p.nudge()
	return nil
}

// observe tells the observer what a poll did.
func (p *Poller) observe(j job, start time.Time, elapsed time.Duration, class string, sent Validators, res *Result, err error) {
	if p.observer == nil {
		return
	}
	r := PollRecord{Start: start, Duration: elapsed, Class: class, Sent: sent, Err: err}
	if res != nil {
		r.StatusCode, r.Bytes = res.StatusCode, res.Bytes
		r.Items = res.ItemCount()
		if res.NotModified && r.StatusCode == 0 {
			r.StatusCode = 304
		}
	}
	var se *StatusError
	var ra *RetryAfterError
	switch {
	case errors.As(err, &se):
		r.StatusCode = se.StatusCode
	case errors.As(err, &ra):
		r.StatusCode = ra.StatusCode
	case errors.Is(err, ErrGone):
		r.StatusCode = 410
	}
	p.observer.Polled(j.cfg.ID, r)
}
