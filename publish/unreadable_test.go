package publish_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
)

// garbler plays a service whose 2xx answers carry ids nobody can read
// ("id":"17x"), while on.
type garbler struct{ on atomic.Bool }

var idNumber = regexp.MustCompile(`"id":(\d+)`)

func (g *garbler) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.on.Load() || !strings.HasPrefix(r.URL.Path, "/v3/") {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Code >= 200 && rec.Code < 300 {
			body = idNumber.ReplaceAll(body, []byte(`"id":"${1}x"`))
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// recordLog keeps every log record's level and message.
type recordLog struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *recordLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *recordLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *recordLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *recordLog) WithGroup(string) slog.Handler      { return l }

// count counts the records at level whose message contains msg.
func (l *recordLog) count(level slog.Level, msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Level == level && strings.Contains(r.Message, msg) {
			n++
		}
	}
	return n
}

func (l *recordLog) atLeast(level slog.Level) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Level >= level {
			n++
		}
	}
	return n
}

// TestUnreadableAnswerGoesToDeadLetters: every POST is carried out (201)
// but its answer cannot be read, and neither can the look-up by
// external_id. Each item ends as one dead letter with a reason naming the
// field, after one POST and one look-up, not a retry loop; one ERROR line
// stands for the feed and cause. Once the answers can be read again,
// retrying the dead letters finds the items the POSTs created, without
// posting them again.
func TestUnreadableAnswerGoesToDeadLetters(t *testing.T) {
	t.Parallel()
	var g garbler
	g.on.Store(true)
	e := newEnvWith(t, onRedis, sandbox.Faults{}, g.wrap)
	logs := &recordLog{}
	reg := prometheus.NewPedanticRegistry()
	p := e.publisher(func(o *publish.Options) {
		o.Logger = slog.New(logs)
		o.Registerer = reg
	})
	const n = 3
	items := stories("odd", n)
	e.accept(p, "odd", items, publish.FeedOptions{InitialItems: 10})
	firstSight := e.log.count(http.MethodGet, "/v3/content") // the feed's reconcile look-up
	e.runUntilEmpty(p, 20*time.Second)

	ctx := context.Background()
	dl, err := p.DeadLetters(ctx)
	if err != nil || len(dl) != n {
		t.Fatalf("dead letters = %+v, %v; want %d", dl, err, n)
	}
	const why = `acs: POST /v3/story: the service answered 201 but its body could not be read: field id: "`
	for _, d := range dl {
		if !strings.Contains(d.Reason, why) || !strings.Contains(d.Reason, "looking it up by external_id: acs: GET /v3/content: the service answered 200") ||
			d.Attempts != 1 || d.Status != http.StatusCreated {
			t.Errorf("dead letter %+v\nwant status 201, 1 attempt, a reason beginning %q and naming the look-up", d, why)
		}
	}
	posts, lookups := e.log.count(http.MethodPost, "/v3/story"), e.log.count(http.MethodGet, "/v3/content")-firstSight
	t.Logf("%d items: %d POSTs, %d look-ups, %d log lines at warn or above", n, posts, lookups, logs.atLeast(slog.LevelWarn))
	if posts != n || lookups != n {
		t.Errorf("%d POSTs and %d look-ups; want %d of each (one per item)", posts, lookups, n)
	}
	if got := logs.atLeast(slog.LevelError); got != 1 {
		t.Errorf("%d ERROR lines; want 1 for the feed and cause", got)
	}
	if got := logs.count(slog.LevelError, "answers cannot be read"); got != 1 {
		t.Errorf("%d ERROR lines about unreadable answers; want 1", got)
	}
	if got := logs.count(slog.LevelWarn, "dead-lettered"); got != n {
		t.Errorf("%d WARN dead-letter lines; want %d, one per item", got, n)
	}
	if got := counterValue(t, reg, "odd", "id"); got != n {
		t.Errorf("feedworker_unreadable_answers_total{feed=odd,cause=id} = %v; want %d", got, n)
	}
	ua := p.UnreadableAnswers()
	if len(ua) != 1 || ua[0].FeedID != "odd" || ua[0].Cause != "id" || ua[0].Count != n || !strings.Contains(ua[0].Reason, why) {
		t.Errorf("UnreadableAnswers = %+v; want one for feed odd, cause id, %d times", ua, n)
	}
	if got := len(e.sb.AllContent()); got != n {
		t.Errorf("%d items on the service; want %d (every POST was carried out)", got, n)
	}

	// Fixed: retrying looks each item up and records it, posting nothing.
	g.on.Store(false)
	if k, err := p.RetryDeadLetters(ctx); err != nil || k != n {
		t.Fatalf("RetryDeadLetters = %d, %v; want %d", k, err, n)
	}
	e.runUntilEmpty(p, 20*time.Second)
	if dl, err := p.DeadLetters(ctx); err != nil || len(dl) != 0 {
		t.Errorf("dead letters after the retry = %+v, %v; want none", dl, err)
	}
	if got := e.log.count(http.MethodPost, "/v3/story"); got != n {
		t.Errorf("%d POSTs after the retry; want still %d", got, n)
	}
	e.exactlyOnce(items)
}

// TestUnreadableLookupIsBounded: the POST fails without a readable answer
// (applied, then 500), and every look-up answers 200 with a body that
// cannot be read. The item is retried a bounded number of times
// (MaxUnresolved look-ups in a row), then dead-lettered; it is never
// posted again.
func TestUnreadableLookupIsBounded(t *testing.T) {
	t.Parallel()
	var g garbler
	g.on.Store(true)
	e := newEnvWith(t, onRedis, sandbox.Faults{CommitThenFail: 1, Seed: 1}, g.wrap)
	logs := &recordLog{}
	p := e.publisher(func(o *publish.Options) {
		o.Logger = slog.New(logs)
		o.MaxUnresolved = 3
	})
	items := stories("odd2", 1)
	e.accept(p, "odd2", items, publish.FeedOptions{InitialItems: 10})
	firstSight := e.log.count(http.MethodGet, "/v3/content") // the feed's reconcile look-up
	e.runUntilEmpty(p, 20*time.Second)

	dl, err := p.DeadLetters(context.Background())
	if err != nil || len(dl) != 1 {
		t.Fatalf("dead letters = %+v, %v; want 1", dl, err)
	}
	if d := dl[0]; !strings.Contains(d.Reason, "GET /v3/content: the service answered 200 but its body could not be read: field [0].id") ||
		!strings.Contains(d.Reason, "given up after 3 attempts in a row") {
		t.Errorf("dead letter %+v; want the look-up's reason, given up after 3", d)
	}
	posts, lookups := e.log.count(http.MethodPost, "/v3/story"), e.log.count(http.MethodGet, "/v3/content")-firstSight
	t.Logf("attempts %d: %d POSTs, %d look-ups, %d ERROR lines", dl[0].Attempts, posts, lookups, logs.atLeast(slog.LevelError))
	// The POST's 500 is an ordinary failure; the run of unreadable
	// look-ups that follows ends the item after MaxUnresolved of them.
	if posts != 1 || lookups != 3 || dl[0].Attempts != 4 || dl[0].Status != http.StatusOK {
		t.Errorf("%d POSTs, %d look-ups, %d attempts, status %d; want 1 POST, then 3 look-ups (4 attempts), status 200", posts, lookups, dl[0].Attempts, dl[0].Status)
	}
	if got := logs.count(slog.LevelError, "answers cannot be read"); got != 1 {
		t.Errorf("%d ERROR lines about unreadable answers; want 1", got)
	}
}

// counterValue reads feedworker_unreadable_answers_total{feed, cause}.
func counterValue(t *testing.T, reg *prometheus.Registry, feed, cause string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "feedworker_unreadable_answers_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["feed"] == feed && labels["cause"] == cause {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no feedworker_unreadable_answers_total{feed=%q,cause=%q}", feed, cause)
	return 0
}
