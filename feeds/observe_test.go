package feeds

import (
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/feedworker/feedworker/config"
)

type pollLog struct {
	mu   sync.Mutex
	recs []PollRecord
}

func (l *pollLog) Polled(feedID string, r PollRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if feedID == "f" {
		l.recs = append(l.recs, r)
	}
}

func (l *pollLog) get() []PollRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]PollRecord(nil), l.recs...)
}

// TestPollNowAndObserver: "poll now" makes a feed with an hour's interval
// poll at once, and the observer hears of each poll with its status code,
// bytes, items and the validators it sent.
func TestPollNowAndObserver(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 3 {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		etagFeed(w, r, n)
	})
	p := newTestPoller(t, config.HTTP{}, newTestHandler(), nil)
	log := &pollLog{}
	p.observer = log
	p.Update([]config.Feed{testFeed("f", srv.URL+"/f", time.Hour)})
	if err := p.PollNow("nope"); !errors.Is(err, ErrNotScheduled) {
		t.Errorf("PollNow of an unknown feed: %v, want ErrNotScheduled", err)
	}
	pollOne(t, p)
	p.run(t)
	for want := 2; want <= 3; want++ {
		if err := p.PollNow("f"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the poll asked for", func() bool { return len(log.get()) >= want })
	}
	recs := log.get()
	if len(recs) != 3 {
		t.Fatalf("%d polls observed, want 3", len(recs))
	}
	if r := recs[0]; r.Class != ClassOK || r.StatusCode != 200 || r.Bytes == 0 || r.Items == 0 || r.Sent.ETag != "" || r.Start.IsZero() {
		t.Errorf("first poll = %+v, want a 200 with bytes and items, sent without validators", r)
	}
	if r := recs[1]; r.Class != ClassNotModified || r.StatusCode != 304 || r.Sent.ETag != `"etag-/f"` {
		t.Errorf("second poll = %+v, want a 304 that sent the ETag", r)
	}
	if r := recs[2]; r.StatusCode != 500 || r.Err == nil {
		t.Errorf("third poll = %+v, want the 500 and its error", r)
	}
}
