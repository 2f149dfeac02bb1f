package feeds

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedworker/feedworker/config"
)

// stateHandler is a testHandler that keeps poll states, as the worker does
// in the store: a second poller over it is a restarted process.
type stateHandler struct {
	*testHandler
	smu    sync.Mutex
	states map[string]PollState
	writes int
	// single counts PollState calls, batches PollStatesAll calls.
	single, batches int
}

func newStateHandler() *stateHandler {
	return &stateHandler{testHandler: newTestHandler(), states: map[string]PollState{}}
}

func (h *stateHandler) PollState(_ context.Context, feedID string) (PollState, bool, error) {
	h.smu.Lock()
	defer h.smu.Unlock()
	h.single++
	s, ok := h.states[feedID]
	return s, ok, nil
}

func (h *stateHandler) SetPollState(_ context.Context, feedID string, s PollState) error {
	h.smu.Lock()
	defer h.smu.Unlock()
	h.writes++
	if s.IsZero() {
		delete(h.states, feedID)
		return nil
	}
	h.states[feedID] = s
	return nil
}

// batchStateHandler also reads many states at once.
type batchStateHandler struct{ *stateHandler }

func (h batchStateHandler) PollStatesAll(_ context.Context, ids []string) (map[string]PollState, error) {
	h.smu.Lock()
	defer h.smu.Unlock()
	h.batches++
	out := map[string]PollState{}
	for _, id := range ids {
		if s, ok := h.states[id]; ok {
			out[id] = s
		}
	}
	return out, nil
}

func (h *stateHandler) counts() (single, batches int) {
	h.smu.Lock()
	defer h.smu.Unlock()
	return h.single, h.batches
}

func (h *stateHandler) state(id string) (PollState, bool) {
	h.smu.Lock()
	defer h.smu.Unlock()
	s, ok := h.states[id]
	return s, ok
}

func hasWarning(ws []Warning, code string) bool {
	return slices.ContainsFunc(ws, func(w Warning) bool { return w.Code == code })
}

// TestPollStateRestart: what one poller promised the feeds' servers, the
// next one over the same store keeps: no poll before a Retry-After, none of
// a gone feed until its config changes, a moved feed fetched at its new URL
// only, and its warning not logged again.
func TestPollStateRestart(t *testing.T) {
	t.Parallel()
	t.Run("per feed", func(t *testing.T) { t.Parallel(); testPollStateRestart(t, false) })
	t.Run("batch", func(t *testing.T) { t.Parallel(); testPollStateRestart(t, true) })
}

func testPollStateRestart(t *testing.T, batch bool) {
	srv := newFeedServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.URL.Path {
		case "/limited":
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/gone":
			w.WriteHeader(http.StatusGone)
		case "/old":
			http.Redirect(w, r, "/new", http.StatusMovedPermanently)
		default:
			etagFeed(w, r, n)
		}
	})
	h := newStateHandler()
	var handler Handler = h
	if batch {
		handler = batchStateHandler{h}
	}
	feedsCfg := []config.Feed{testFeed("limited", srv.URL+"/limited", 0), testFeed("gone", srv.URL+"/gone", 0),
		testFeed("moved", srv.URL+"/old", 0), testFeed("fine", srv.URL+"/fine", 0)}
	p1 := newTestPoller(t, config.HTTP{}, handler, nil)
	p1.Update(feedsCfg)
	p1.PollAll(t.Context())
	p1.PollAll(t.Context()) // the moved feed again: straight to /new
	if n, m := srv.count("/old"), srv.count("/new"); n != 1 || m != 2 {
		t.Errorf("first poller: /old fetched %d times, /new %d; want 1 and 2", n, m)
	}
	if st, ok := h.state("fine"); ok {
		t.Errorf("a healthy feed has a stored state %+v; want none (no write per poll)", st)
	}
	// Nor does the poller's memory of it hold a state or warnings: those
	// are apart, for the feeds that have them.
	p1.mu.Lock()
	if fs := p1.feeds["fine"]; fs.saved != nil || fs.warns != nil {
		t.Errorf("the healthy feed's memory holds state %+v, warnings %+v; want none", fs.saved, fs.warns)
	}
	if fs := p1.feeds["moved"]; fs.saved == nil || fs.warns == nil || !hasWarning(fs.warnings(), WarnMoved) {
		t.Errorf("the moved feed's memory holds state %+v, warnings %+v; want its state and its warning", fs.saved, fs.warns)
	}
	p1.mu.Unlock()
	// PollAll polls every feed (feedworker once); the schedule is Run's.
	if st, _ := h.state("limited"); st.Failures != 2 || time.Until(st.NotBefore) < 59*time.Minute {
		t.Errorf("stored state of limited = %+v, want 2 failures and no poll for an hour", st)
	}

	// The restart.
	p2 := newTestPoller(t, config.HTTP{}, handler, nil)
	p2.Update(feedsCfg)
	res := p2.PollAll(t.Context())
	if single, batches := h.counts(); batch && (single != 0 || batches != 2) {
		t.Errorf("states read %d times alone and in %d batches; want only a batch per pass", single, batches)
	}
	for _, r := range res {
		if (r.FeedID == "limited" || r.FeedID == "gone") && !r.Skipped {
			t.Errorf("second poller polled %s: %+v", r.FeedID, r)
		}
	}
	if n := srv.count("/limited"); n != 2 {
		t.Errorf("/limited fetched %d times, want no more than before: its Retry-After holds across a restart", n-2)
	}
	if n := srv.count("/gone"); n != 1 {
		t.Errorf("/gone fetched %d times, want once (the second pass skips it)", n)
	}
	if n, m := srv.count("/old"), srv.count("/new"); n != 1 || m != 3 {
		t.Errorf("after the restart: /old fetched %d times, /new %d; want 1 and 3", n, m)
	}
	if st := p2.status(t, "limited"); time.Until(st.NextPoll) < 59*time.Minute || st.Failures != 2 {
		t.Errorf("limited after the restart = %+v, want the next poll an hour away", st)
	}
	if st := p2.status(t, "gone"); !st.Gone {
		t.Errorf("gone after the restart = %+v", st)
	}
	st := p2.status(t, "moved")
	if st.MovedTo != srv.URL+"/new" || !hasWarning(st.Warnings, WarnMoved) {
		t.Errorf("moved after the restart = %+v", st)
	}
	if logs := p2.logs.String(); containsAll(logs, `msg="feed warning" feed=moved`) {
		t.Errorf("the moved warning was logged again after the restart:\n%s", logs)
	}

	// A config change lifts the gone mark; a new URL clears the move.
	changed := slices.Clone(feedsCfg)
	changed[1] = testFeed("gone", srv.URL+"/gone", 2*time.Hour)
	changed[2] = testFeed("moved", srv.URL+"/moved-here", 0)
	p2.Update(changed)
	p2.PollAll(t.Context())
	if n := srv.count("/gone"); n != 2 {
		t.Errorf("/gone fetched %d times after its config changed, want 2", n)
	}
	if n := srv.count("/moved-here"); n != 1 {
		t.Errorf("the new URL fetched %d times, want 1", n)
	}
	st = p2.status(t, "moved")
	if st.MovedTo != "" || hasWarning(st.Warnings, WarnMoved) {
		t.Errorf("moved after its URL changed = %+v, want no move", st)
	}
	if s, ok := h.state("moved"); ok {
		t.Errorf("stored state of the moved feed after its URL changed = %+v, want none", s)
	}
	if logs := p2.logs.String(); !containsAll(logs, `msg="feed warning cleared" feed=moved warning=moved`) {
		t.Errorf("the moved warning's end was not logged:\n%s", logs)
	}
}

// TestPollStateFollowOff: with http.follow_permanent_redirects false every
// poll starts at the configured URL, and the move is still reported.
func TestPollStateFollowOff(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusPermanentRedirect)
			return
		}
		etagFeed(w, r, n)
	})
	off := false
	p := newTestPoller(t, config.HTTP{FollowPermanentRedirects: &off}, newStateHandler(), nil)
	p.Update([]config.Feed{testFeed("moved", srv.URL+"/old", 0)})
	for range 3 {
		pollOne(t, p)
	}
	if n := srv.count("/old"); n != 3 {
		t.Errorf("/old fetched %d times, want every poll", n)
	}
	if st := p.status(t, "moved"); st.MovedTo != srv.URL+"/new" || !hasWarning(st.Warnings, WarnMoved) {
		t.Errorf("status = %+v", st)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// TestPollStateLeaseHandover: a replica that gets a feed's lease back
// reads the state the other replica stored meanwhile, and keeps its
// server's Retry-After.
func TestPollStateLeaseHandover(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	limited := false
	srv := newFeedServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		mu.Lock()
		l := limited
		mu.Unlock()
		if l {
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		etagFeed(w, r, n)
	})
	h := newStateHandler()
	a := &testOwner{own: map[string]bool{}}
	b := &testOwner{own: map[string]bool{"f": true}}
	cfg := []config.Feed{testFeed("f", srv.URL+"/f", 0)}
	pa := newTestPoller(t, config.HTTP{}, h, a)
	pb := newTestPoller(t, config.HTTP{}, h, b)
	pa.Update(cfg)
	pb.Update(cfg)

	if r := pollOne(t, pb); r.Class != ClassOK {
		t.Fatalf("b's poll: %+v", r)
	}
	b.set("f", false)
	a.set("f", true)
	if r := pollOne(t, pb); !r.Skipped {
		t.Fatalf("b polled a feed it does not own: %+v", r)
	}
	mu.Lock()
	limited = true
	mu.Unlock()
	if r := pollOne(t, pa); r.Class != ClassRateLimited {
		t.Fatalf("a's poll: %+v", r)
	}
	a.set("f", false)
	b.set("f", true)
	if r := pollOne(t, pb); !r.Skipped || r.Err == nil {
		t.Errorf("b's poll after taking the feed back: %+v, want it skipped until the Retry-After", r)
	}
	if n := srv.count("/f"); n != 2 {
		t.Errorf("/f fetched %d times, want 2 (b once, a once)", n)
	}
	if st := pb.status(t, "f"); time.Until(st.NextPoll) < 59*time.Minute {
		t.Errorf("b's status = %+v, want the next poll an hour away", st)
	}
}
