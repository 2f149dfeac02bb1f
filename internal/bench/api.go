package bench

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// apiCounter wraps the sandbox and counts what the worker asked of it:
// every request, the writes it confirmed (2xx to a POST or PUT of content)
// and when each confirmation was sent, for the delivered rate.
type apiCounter struct {
	h http.Handler

	mu       sync.Mutex
	requests int64
	created  int64
	updated  int64
	limited  int64       // 429 answers
	writes   []time.Time // when each confirmed write was answered
}

func newAPICounter(h http.Handler) *apiCounter { return &apiCounter{h: h} }

// contentWrite tells a create or update of content (POST /v3/story, PUT
// /v3/story/12, and the same for link, event and need) from other calls:
// token, category and look-up requests.
func contentWrite(method, path string) (create, update bool) {
	rest, ok := strings.CutPrefix(path, "/v3/")
	if !ok {
		return false, false
	}
	typ, id, hasID := strings.Cut(rest, "/")
	switch typ {
	case "story", "link", "event", "need":
	default:
		return false, false
	}
	switch {
	case method == http.MethodPost && !hasID:
		return true, false
	case method == http.MethodPut && hasID && id != "" && !strings.Contains(id, "/"):
		return false, true
	}
	return false, false
}

func (a *apiCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w}
	a.h.ServeHTTP(sw, r)
	create, update := contentWrite(r.Method, r.URL.Path)
	ok := sw.status >= 200 && sw.status < 300
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests++
	if sw.status == http.StatusTooManyRequests {
		a.limited++
	}
	if ok && (create || update) {
		if create {
			a.created++
		} else {
			a.updated++
		}
		a.writes = append(a.writes, time.Now())
	}
}

// apiCounts are the counters at one moment, or over an interval.
type apiCounts struct {
	requests, created, updated, limited int64
	// first and last are the times of the first and the last confirmed
	// write of an interval (zero in a snapshot, or with no write).
	first, last time.Time
	nwrites     int // confirmed writes so far, to take intervals
}

func (a *apiCounter) snapshot() apiCounts {
	a.mu.Lock()
	defer a.mu.Unlock()
	return apiCounts{requests: a.requests, created: a.created, updated: a.updated, limited: a.limited, nwrites: len(a.writes)}
}

// since returns the counts of the interval from before to now.
func (a *apiCounter) since(before apiCounts) apiCounts {
	now := a.snapshot()
	d := apiCounts{
		requests: now.requests - before.requests,
		created:  now.created - before.created,
		updated:  now.updated - before.updated,
		limited:  now.limited - before.limited,
		nwrites:  now.nwrites - before.nwrites,
	}
	if d.nwrites > 0 {
		a.mu.Lock()
		d.first, d.last = a.writes[before.nwrites], a.writes[now.nwrites-1]
		a.mu.Unlock()
	}
	return d
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
