package transform

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-ical"
	"github.com/google/go-cmp/cmp"

	"github.com/feedworker/feedworker/config"
)

// icalNow is the clock of the calendar tests: a Monday in 2026, a week
// before the US and four before the EU switch to summer time.
var icalNow = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

func readCalendar(t testing.TB, name string) *ical.Calendar {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "ical", name))
	if err != nil {
		t.Fatal(err)
	}
	cal, err := ical.NewDecoder(bytes.NewReader(b)).Decode()
	if err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	return cal
}

// wantEvent is what a test checks of one mapped occurrence.
type wantEvent struct {
	Key        string // the identity key; the external id is derived from it
	Title      string
	Start, End string // RFC 3339 UTC; "" for none
	AllDay     bool
	Cancelled  bool
	Location   string
	URL        string
	Image      string
	Categories []string
}

func gotEvents(t *testing.T, feedID string, results []Result) ([]wantEvent, []string) {
	t.Helper()
	var got []wantEvent
	var other []string
	for i, r := range results {
		if r.Payload == nil {
			other = append(other, cmpString(r.Skip, r.Err))
			continue
		}
		p := r.Payload
		if p.Type != TypeEvent || p.Event == nil || p.Event.AllDay == nil {
			t.Fatalf("result %d: type %q event %+v, want an event with all_day set", i, p.Type, p.Event)
		}
		if p.Hash != p.computeHash() {
			t.Errorf("result %d: stale hash", i)
		}
		w := wantEvent{Title: p.Title, Start: p.Event.Start.Format(time.RFC3339), AllDay: *p.Event.AllDay,
			Cancelled: p.Cancelled, Location: p.Event.Location, URL: p.ExternalURL, Image: p.ImageURL, Categories: p.CategoryNames}
		if !p.Event.End.IsZero() {
			w.End = p.Event.End.Format(time.RFC3339)
		}
		w.Key = p.ExternalID // replaced below by the key it was made from
		got = append(got, w)
	}
	return got, other
}

func cmpString(skip string, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return "skip: " + skip
}

// keyed replaces each wanted key by the external id it makes, so a diff
// shows readable keys only when they differ.
func keyed(feedID string, want []wantEvent) []wantEvent {
	out := make([]wantEvent, len(want))
	for i, w := range want {
		w.Key = externalID(feedID, w.Key)
		out[i] = w
	}
	return out
}

// TestMapCalendarGoogle: a Google Calendar export with its VTIMEZONE, a
// weekly series crossing the US switch to summer time with an EXDATE and
// one overridden instance, a cancelled event, an image attachment, and a
// past event outside the window.
func TestMapCalendarGoogle(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "lib", func(c *config.Mapping) { c.Type = "event"; c.PassUnmappedCategories = ptr(true) })
	results := m.MapCalendar(readCalendar(t, "google.ics"), icalNow)
	got, other := gotEvents(t, "lib", results)
	const loc = "Children's Room, Springfield Library, 12 Main St, Springfield"
	cats := []string{"Kids", "Reading"}
	want := keyed("lib", []wantEvent{
		// 10:00 New York: EST (UTC-5) before March 8, EDT (UTC-4) after.
		{Key: "ical:storytime-2026@google.com#20260303T150000Z", Title: "Story Time", Start: "2026-03-03T15:00:00Z", End: "2026-03-03T16:30:00Z", Location: loc, Categories: cats},
		{Key: "ical:storytime-2026@google.com#20260310T140000Z", Title: "Story Time", Start: "2026-03-10T14:00:00Z", End: "2026-03-10T15:30:00Z", Location: loc, Categories: cats},
		// March 17 is an EXDATE. March 24 is overridden: an hour later,
		// another title and room, under the id of the instance it replaces.
		{Key: "ical:storytime-2026@google.com#20260324T140000Z", Title: "Story Time with a Guest Author", Start: "2026-03-24T15:00:00Z", End: "2026-03-24T16:30:00Z", Location: "Auditorium, Springfield Library"},
		{Key: "ical:storytime-2026@google.com#20260331T140000Z", Title: "Story Time", Start: "2026-03-31T14:00:00Z", End: "2026-03-31T15:30:00Z", Location: loc, Categories: cats},
		{Key: "ical:booktalk-0305@google.com", Title: "Book Talk", Start: "2026-03-05T23:00:00Z", End: "2026-03-06T01:00:00Z", Cancelled: true},
		{Key: "ical:filmnight-0312@google.com", Title: "Film Night: Casablanca", Start: "2026-03-12T22:00:00Z", End: "2026-03-13T00:00:00Z",
			URL: "https://library.example.org/events/film-night", Image: "https://library.example.org/img/film.jpg"},
	})
	if diff := cmp.Diff(want, got); diff != "" || len(other) > 0 {
		t.Errorf("events (-want +got):\n%s\nother results: %q", diff, other)
	}
	// Google writes HTML in DESCRIPTION: kept, sanitized.
	body := results[0].Payload.Body
	if !strings.Contains(body, `<a href="https://library.example.org/kids"`) || strings.Contains(body, "script") || strings.Contains(body, "alert") {
		t.Errorf("story time body = %q, want the link kept and the script gone", body)
	}
	if results[0].Payload.Summary == "" {
		t.Errorf("story time has no summary")
	}
	if r := results[5].Payload; r.Event.RegistrationURL != "https://library.example.org/events/film-night" {
		t.Errorf("film night registration url = %q", r.Event.RegistrationURL)
	}
}

// TestMapCalendarOutlook: an Exchange export whose VTIMEZONE is named by
// a Windows zone name (rules from 1601), a Windows TZID without VTIMEZONE,
// X-ALT-DESC HTML, structured X- address properties and all-day events.
func TestMapCalendarOutlook(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "council", nil)
	results := m.MapCalendar(readCalendar(t, "outlook.ics"), icalNow)
	got, other := gotEvents(t, "council", results)
	want := keyed("council", []wantEvent{
		// Europe switched to summer time on March 29: 19:00 is UTC+2.
		{Key: "ical:040000008200E00074C5B7101A82E00800000000A0B1C2D3E4F5", Title: "Council Meeting", Start: "2026-03-30T17:00:00Z", End: "2026-03-30T19:00:00Z", Location: "Town Hall"},
		// "Pacific Standard Time" is America/Los_Angeles: PDT since March 8.
		{Key: "ical:040000008200E00074C5B7101A82E00800000000FFEEDDCC", Title: "Partner call (Seattle)", Start: "2026-03-10T16:00:00Z", End: "2026-03-10T17:00:00Z"},
		// All-day, three days (DTEND is exclusive): first and last day.
		{Key: "ical:040000008200E00074C5B7101A82E0080000000011223344", Title: "Spring Festival", Start: "2026-03-20T00:00:00Z", End: "2026-03-22T00:00:00Z", AllDay: true},
		{Key: "ical:040000008200E00074C5B7101A82E0080000000055667788", Title: "Clean-up Day", Start: "2026-03-14T00:00:00Z", AllDay: true},
	})
	if diff := cmp.Diff(want, got); diff != "" || len(other) > 0 {
		t.Errorf("events (-want +got):\n%s\nother results: %q", diff, other)
	}
	council := results[0].Payload
	if b := council.Body; !strings.Contains(b, "<b>Council meeting</b>") || strings.Contains(b, "onclick") {
		t.Errorf("council body = %q, want the X-ALT-DESC HTML, sanitized", b)
	}
	ev := council.Event
	if ev.StreetAddress != "1 Market Square" || ev.City != "Springfield" || ev.PostalCode != "12345" || ev.Country != "DE" {
		t.Errorf("council address = %+v", ev)
	}
	if results[0].Warning != "" {
		t.Errorf("warning %q, want none", results[0].Warning)
	}
}

// TestMapCalendarFloating: a time without zone is read in the calendar's
// X-WR-TIMEZONE, else event.time_zone_name, else UTC; an unknown TZID is
// read the same way, with a warning naming it.
func TestMapCalendarFloating(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, zone string
		start, end string
		unknownAt  string
	}{
		{"utc", "", "2026-03-06T09:30:00Z", "2026-03-06T11:00:00Z", "2026-03-07T12:00:00Z"},
		{"time_zone_name", "America/Chicago", "2026-03-06T15:30:00Z", "2026-03-06T17:00:00Z", "2026-03-07T18:00:00Z"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := mustCompile(t, "lab", func(c *config.Mapping) {
				if tt.zone != "" {
					c.Event = &config.EventFields{TimeZoneName: tt.zone}
				}
			})
			results := m.MapCalendar(readCalendar(t, "floating.ics"), icalNow)
			got, _ := gotEvents(t, "lab", results)
			want := keyed("lab", []wantEvent{
				{Key: "ical:floating-1@example.edu", Title: "Open Lab", Start: tt.start, End: tt.end, Location: "Room 101", URL: "https://events.example.edu/open-lab"},
				{Key: "ical:weird-tz@example.edu", Title: "Unknown zone", Start: tt.unknownAt},
			})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if w := results[0].Warning; !strings.Contains(w, `"Mars/Olympus_Mons"`) {
				t.Errorf("warning = %q, want it to name the unknown TZID", w)
			}
		})
	}
}

// TestMapCalendarStable: identities and hashes do not depend on the clock
// (a week later the same occurrences map to the same payloads), and a
// new DTSTAMP alone changes nothing.
func TestMapCalendarStable(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "lib", nil)
	a := m.MapCalendar(readCalendar(t, "google.ics"), icalNow)
	cal := readCalendar(t, "google.ics")
	for _, c := range cal.Children {
		if c.Name == ical.CompEvent {
			c.Props.Get(ical.PropDateTimeStamp).Value = "20260309T000000Z"
		}
	}
	b := m.MapCalendar(cal, icalNow.Add(24*time.Hour))
	hashes := map[string]string{}
	for _, r := range a {
		hashes[r.Payload.ExternalID] = r.Payload.Hash
	}
	for _, r := range b {
		if h, ok := hashes[r.Payload.ExternalID]; ok && h != r.Payload.Hash {
			t.Errorf("%s (%s): hash changed with the clock or DTSTAMP", r.Payload.ExternalID, r.Payload.Title)
		}
	}
	if len(b) != len(a) {
		t.Errorf("a day later: %d results, want %d", len(b), len(a))
	}
}

// TestMapCalendarKeepCancelled: ical.on_cancel keep skips a cancelled
// event rather than marking it for deletion.
func TestMapCalendarKeepCancelled(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "lib", func(c *config.Mapping) { c.ICal.OnCancel = ptr("keep") })
	for _, r := range m.MapCalendar(readCalendar(t, "google.ics"), icalNow) {
		if r.Payload != nil && r.Payload.Cancelled {
			t.Errorf("%s is marked cancelled; want it skipped", r.Payload.Title)
		}
		if r.Skip != "" && !strings.HasPrefix(r.Skip, "cancelled") {
			t.Errorf("unexpected skip %q", r.Skip)
		}
	}
}

// TestMapCalendarBadRule: a broken or runaway RRULE is an error for that
// event alone, naming it; the calendar's other events still map.
func TestMapCalendarBadRule(t *testing.T) {
	t.Parallel()
	src := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\n" +
		"BEGIN:VEVENT\r\nUID:bad\r\nDTSTART:20260305T100000Z\r\nRRULE:FREQ=SOMETIMES\r\nSUMMARY:Bad\r\nEND:VEVENT\r\n" +
		"BEGIN:VEVENT\r\nUID:runaway\r\nDTSTART:19700101T000000Z\r\nRRULE:FREQ=SECONDLY\r\nSUMMARY:Runaway\r\nEND:VEVENT\r\n" +
		"BEGIN:VEVENT\r\nUID:good\r\nDTSTART:20260305T100000Z\r\nSUMMARY:Good\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
	cal, err := ical.NewDecoder(strings.NewReader(src)).Decode()
	if err != nil {
		t.Fatal(err)
	}
	results := mustCompile(t, "x", nil).MapCalendar(cal, icalNow)
	if len(results) != 3 {
		t.Fatalf("%d results, want 3", len(results))
	}
	for i, want := range []string{`event "bad": RRULE`, `event "runaway": recurrence expands to too many occurrences`} {
		if err := results[i].Err; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("result %d: err %v, want one containing %q", i, err, want)
		}
	}
	if p := results[2].Payload; p == nil || p.Title != "Good" {
		t.Errorf("result 2 = %+v, want the good event", results[2])
	}
}

// TestMapCalendarOwnVTimezone: a VTIMEZONE of the file is read even when
// its TZID is no IANA or Windows name, and wins over those when it is.
func TestMapCalendarOwnVTimezone(t *testing.T) {
	t.Parallel()
	src := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\n" +
		// A made-up zone: UTC+3 until 2026-03-15 02:00, UTC+4 after.
		"BEGIN:VTIMEZONE\r\nTZID:Springfield Time\r\n" +
		"BEGIN:STANDARD\r\nDTSTART:20000101T000000\r\nTZOFFSETFROM:+0300\r\nTZOFFSETTO:+0300\r\nEND:STANDARD\r\n" +
		"BEGIN:DAYLIGHT\r\nDTSTART:20260315T020000\r\nTZOFFSETFROM:+0300\r\nTZOFFSETTO:+0400\r\nEND:DAYLIGHT\r\nEND:VTIMEZONE\r\n" +
		// Europe/Paris redefined as UTC-1 all year: the file's word counts.
		"BEGIN:VTIMEZONE\r\nTZID:Europe/Paris\r\nBEGIN:STANDARD\r\nDTSTART:19700101T000000\r\nTZOFFSETFROM:-0100\r\nTZOFFSETTO:-0100\r\nEND:STANDARD\r\nEND:VTIMEZONE\r\n" +
		"BEGIN:VEVENT\r\nUID:a\r\nDTSTART;TZID=Springfield Time:20260310T100000\r\nSUMMARY:Before\r\nEND:VEVENT\r\n" +
		"BEGIN:VEVENT\r\nUID:b\r\nDTSTART;TZID=Springfield Time:20260320T100000\r\nSUMMARY:After\r\nEND:VEVENT\r\n" +
		"BEGIN:VEVENT\r\nUID:c\r\nDTSTART;TZID=Europe/Paris:20260320T100000\r\nSUMMARY:Paris\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
	cal, err := ical.NewDecoder(strings.NewReader(src)).Decode()
	if err != nil {
		t.Fatal(err)
	}
	got, other := gotEvents(t, "z", mustCompile(t, "z", nil).MapCalendar(cal, icalNow))
	want := keyed("z", []wantEvent{
		{Key: "ical:a", Title: "Before", Start: "2026-03-10T07:00:00Z"},
		{Key: "ical:b", Title: "After", Start: "2026-03-20T06:00:00Z"},
		{Key: "ical:c", Title: "Paris", Start: "2026-03-20T11:00:00Z"},
	})
	if diff := cmp.Diff(want, got); diff != "" || len(other) > 0 {
		t.Errorf("events (-want +got):\n%s\nother: %q", diff, other)
	}
}
