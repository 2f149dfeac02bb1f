package worker

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/sandbox"
)

// calendarNow is the mapping clock of these tests: the calendars in
// transform/testdata/ical are written around it.
var calendarNow = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// calendarEnv is a sandbox that counts the requests it answers, and a
// server of calendars whose text a test edits between passes.
type calendarEnv struct {
	sb     *sandbox.Server
	sbURL  string
	calURL string
	dir    string

	mu       sync.Mutex
	cals     map[string]string // path → body
	requests []string          // "METHOD /v3/type" of content writes
}

func newCalendarEnv(t *testing.T) *calendarEnv {
	t.Helper()
	sb, err := sandbox.New(sandbox.Options{ClientSecret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	e := &calendarEnv{sb: sb, dir: t.TempDir(), cals: map[string]string{}}
	ss := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && strings.HasPrefix(r.URL.Path, "/v3/") && !strings.HasPrefix(r.URL.Path, "/v3/category") {
			parts := strings.Split(r.URL.Path, "/")
			e.mu.Lock()
			e.requests = append(e.requests, r.Method+" /v3/"+parts[2])
			e.mu.Unlock()
		}
		sb.ServeHTTP(w, r)
	}))
	t.Cleanup(ss.Close)
	cs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		body, ok := e.cals[r.URL.Path]
		e.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/calendar; charset=utf-8")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(cs.Close)
	e.sbURL, e.calURL = ss.URL, cs.URL
	return e
}

func (e *calendarEnv) serve(path, body string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cals[path] = body
}

// took returns the content writes answered since the last call.
func (e *calendarEnv) took() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.requests
	e.requests = nil
	slices.Sort(out)
	return out
}

func (e *calendarEnv) config(t *testing.T, feeds string) *config.Config {
	t.Helper()
	src := fmt.Sprintf(`api:
  base_url: %s
  token_url: %s/oauth/token
  client_id: sandbox
  client_secret: %s
store:
  path: %s
admin:
  listen: ""
feeds:
%s`, e.sbURL, e.sbURL, testSecret, filepath.Join(e.dir, "store.db"), strings.ReplaceAll(feeds, "CAL", e.calURL))
	path := filepath.Join(e.dir, "config.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path, "test")
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

func testCalendar(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "transform", "testdata", "ical", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// apiEvent is what these tests read back of an event on the sandbox.
type apiEvent struct {
	Title  string
	Start  string `json:"event_start_date_time_utc"`
	End    string `json:"event_end_date_time_utc"`
	AllDay bool   `json:"event_all_day"`
}

func (e *calendarEnv) events(t *testing.T) []apiEvent {
	t.Helper()
	var out []apiEvent
	for _, it := range e.sb.AllContent() {
		if it.Type != "event" {
			t.Errorf("content %d is a %s, want an event", it.ID, it.Type)
			continue
		}
		var ev apiEvent
		if err := json.Unmarshal(it.JSON, &ev); err != nil {
			t.Fatal(err)
		}
		ev.Title = it.Title
		out = append(out, ev)
	}
	slices.SortFunc(out, func(a, b apiEvent) int { return strings.Compare(a.Start+a.Title, b.Start+b.Title) })
	return out
}

func once(t *testing.T, w *Worker) {
	t.Helper()
	if _, err := w.Once(t.Context()); err != nil {
		t.Fatalf("Once: %v", err)
	}
}

func wantRequests(t *testing.T, pass string, got []string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: content requests %q, want %q", pass, got, want)
	}
}

func wantEvents(t *testing.T, pass string, got []apiEvent, want ...apiEvent) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: events on the API\n got %+v\nwant %+v", pass, got, want)
	}
}

// TestCalendarGoogleEndToEnd: a Google Calendar export, detected by its
// type (format auto), is published against the sandbox; then a cancelled
// event and an occurrence that left the series are deleted exactly once,
// an edited override is PUT, and a third pass sends nothing.
func TestCalendarGoogleEndToEnd(t *testing.T) {
	e := newCalendarEnv(t)
	cal := testCalendar(t, "google.ics")
	e.serve("/library.ics", cal)
	cfg := e.config(t, "  - id: library\n    url: CAL/library.ics\n    type: event\n")
	w := newWorker(t, cfg, Options{Now: func() time.Time { return calendarNow }})

	once(t, w)
	// The cancelled Book Talk is never posted; last year's gala is out of
	// the window.
	wantRequests(t, "first pass", e.took(), "POST /v3/event", "POST /v3/event", "POST /v3/event", "POST /v3/event", "POST /v3/event")
	wantEvents(t, "first pass", e.events(t),
		apiEvent{"Story Time", "2026-03-03 15:00:00", "2026-03-03 16:30:00", false},
		apiEvent{"Story Time", "2026-03-10 14:00:00", "2026-03-10 15:30:00", false},
		apiEvent{"Film Night: Casablanca", "2026-03-12 22:00:00", "2026-03-13 00:00:00", false},
		apiEvent{"Story Time with a Guest Author", "2026-03-24 15:00:00", "2026-03-24 16:30:00", false},
		apiEvent{"Story Time", "2026-03-31 14:00:00", "2026-03-31 15:30:00", false},
	)

	// Someone deletes film night on the service first: the worker's
	// DELETE then meets a 404, which means done.
	for _, it := range e.sb.AllContent() {
		if it.Title == "Film Night: Casablanca" {
			e.deleteEvent(t, it.ID)
		}
	}
	e.took()

	// Film night is cancelled, March 31 is dropped from the series (an
	// EXDATE: it disappears while still ahead), the override is renamed.
	cal = strings.Replace(cal, "SUMMARY:Film Night: Casablanca", "SUMMARY:Film Night: Casablanca\r\nSTATUS:CANCELLED\r\nSEQUENCE:1", 1)
	cal = strings.Replace(cal, "EXDATE;TZID=America/New_York:20260317T100000", "EXDATE;TZID=America/New_York:20260317T100000,20260331T100000", 1)
	cal = strings.Replace(cal, "SUMMARY:Story Time with a Guest Author", "SUMMARY:Story Time with Two Guest Authors", 1)
	e.serve("/library.ics", cal)
	once(t, w)
	wantRequests(t, "second pass", e.took(), "DELETE /v3/event", "DELETE /v3/event", "PUT /v3/event")
	wantEvents(t, "second pass", e.events(t),
		apiEvent{"Story Time", "2026-03-03 15:00:00", "2026-03-03 16:30:00", false},
		apiEvent{"Story Time", "2026-03-10 14:00:00", "2026-03-10 15:30:00", false},
		apiEvent{"Story Time with Two Guest Authors", "2026-03-24 15:00:00", "2026-03-24 16:30:00", false},
	)

	// Nothing changed: nothing is sent, the deletions are remembered.
	once(t, w)
	wantRequests(t, "third pass", e.took())

	// The whole series leaves the calendar: its occurrences still ahead
	// are deleted, once.
	start := strings.Index(cal, "BEGIN:VEVENT\r\nDTSTART;TZID=America/New_York:20260224T100000")
	end := strings.Index(cal, "BEGIN:VEVENT\r\nDTSTART:20260305T230000Z")
	e.serve("/library.ics", cal[:start]+cal[end:])
	once(t, w)
	wantRequests(t, "fourth pass", e.took(), "DELETE /v3/event", "DELETE /v3/event", "DELETE /v3/event")
	wantEvents(t, "fourth pass", e.events(t))
	once(t, w)
	wantRequests(t, "fifth pass", e.took())
}

// TestCalendarOutlookEndToEnd: an Exchange export with Windows zone names
// and all-day events, and a calendar of floating times read in
// event.time_zone_name, published with format: ical.
func TestCalendarOutlookEndToEnd(t *testing.T) {
	e := newCalendarEnv(t)
	e.serve("/council.ics", testCalendar(t, "outlook.ics"))
	e.serve("/lab.ics", testCalendar(t, "floating.ics"))
	cfg := e.config(t, `  - id: council
    url: CAL/council.ics
    format: ical
    type: event
  - id: lab
    url: CAL/lab.ics
    format: ical
    type: event
    event:
      time_zone_name: America/Chicago
`)
	w := newWorker(t, cfg, Options{Now: func() time.Time { return calendarNow }})
	once(t, w)
	wantRequests(t, "first pass", e.took(), slices.Repeat([]string{"POST /v3/event"}, 6)...)
	wantEvents(t, "first pass", e.events(t),
		apiEvent{"Open Lab", "2026-03-06 15:30:00", "2026-03-06 17:00:00", false},
		apiEvent{"Unknown zone", "2026-03-07 18:00:00", "", false},
		apiEvent{"Partner call (Seattle)", "2026-03-10 16:00:00", "2026-03-10 17:00:00", false},
		apiEvent{"Clean-up Day", "2026-03-14 00:00:00", "", true},
		apiEvent{"Spring Festival", "2026-03-20 00:00:00", "2026-03-22 00:00:00", true},
		apiEvent{"Council Meeting", "2026-03-30 17:00:00", "2026-03-30 19:00:00", false},
	)
}

// TestCalendarInitialPast: an occurrence over on first sight is recorded,
// not posted, unless ical.initial_past; a feed whose format is ical fails
// on an RSS document rather than publishing it.
func TestCalendarInitialPast(t *testing.T) {
	e := newCalendarEnv(t)
	cal := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\n" +
		"BEGIN:VEVENT\r\nUID:breakfast\r\nDTSTART:20260302T080000Z\r\nDTEND:20260302T090000Z\r\nSUMMARY:Breakfast\r\nEND:VEVENT\r\n" +
		"BEGIN:VEVENT\r\nUID:lunch\r\nDTSTART:20260302T130000Z\r\nDTEND:20260302T140000Z\r\nSUMMARY:Lunch\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
	e.serve("/a.ics", cal)
	e.serve("/b.ics", cal)
	cfg := e.config(t, `  - id: skips-past
    url: CAL/a.ics
    type: event
  - id: posts-past
    url: CAL/b.ics
    type: event
    ical:
      initial_past: true
`)
	w := newWorker(t, cfg, Options{Now: func() time.Time { return calendarNow }})
	once(t, w)
	wantRequests(t, "first pass", e.took(), "POST /v3/event", "POST /v3/event", "POST /v3/event")
	titles := map[string]int{}
	for _, ev := range e.events(t) {
		titles[ev.Title]++
	}
	if titles["Breakfast"] != 1 || titles["Lunch"] != 2 {
		t.Errorf("titles on the API %v, want Breakfast once (initial_past) and Lunch twice", titles)
	}
}

// TestCalendarFormatMismatch: format ical refuses a document that is not
// iCalendar, and format feed refuses one that is.
func TestCalendarFormatMismatch(t *testing.T) {
	e := newCalendarEnv(t)
	e.serve("/cal.ics", testCalendar(t, "floating.ics"))
	cfg := e.config(t, "  - id: wants-feed\n    url: CAL/cal.ics\n    format: feed\n")
	w := newWorker(t, cfg, Options{Now: func() time.Time { return calendarNow }})
	_, err := w.Once(t.Context())
	if err == nil || !strings.Contains(err.Error(), "format is feed, but the URL served an iCalendar document") {
		t.Errorf("Once = %v, want a format error", err)
	}
	wantRequests(t, "format feed", e.took())
}

// deleteEvent deletes an event on the sandbox as another client would.
func (e *calendarEnv) deleteEvent(t *testing.T, id int64) {
	t.Helper()
	form := strings.NewReader("grant_type=client_credentials")
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.sbURL+"/oauth/token", form)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("sandbox", testSecret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	err = json.NewDecoder(res.Body).Decode(&tok)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodDelete, fmt.Sprintf("%s/v3/event/%d", e.sbURL, id), nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("delete event %d: %s", id, res.Status)
	}
}
