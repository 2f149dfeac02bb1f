package transform

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/feedworker/feedworker/feeds"
)

// FuzzMapCalendar: no calendar makes MapCalendar panic, and every payload
// it makes is an Event with a start, an external id and a current hash.
func FuzzMapCalendar(f *testing.F) {
	for _, name := range []string{"google.ics", "outlook.ics", "floating.ics"} {
		b, err := os.ReadFile(filepath.Join("testdata", "ical", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART;TZID=Nowhere:20260305T100000\r\nRRULE:FREQ=DAILY;BYSETPOS=-1;COUNT=3\r\nEXDATE:20260306\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"))
	m := mustCompile(f, "fuzz", nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		// Decoded as the worker does it: go-ical panics on some
		// malformed lines, which ParseCalendar turns into an error.
		cal, err := feeds.ParseCalendar(b)
		if err != nil {
			return
		}
		for _, r := range m.MapCalendar(cal, icalNow) {
			p := r.Payload
			if p == nil {
				continue
			}
			if p.Type != TypeEvent || p.Event == nil || p.Event.Start.IsZero() || p.ExternalID == "" || p.Hash != p.computeHash() {
				t.Fatalf("bad payload %+v", p)
			}
		}
	})
}

// BenchmarkMapCalendar maps the Google export: a VTIMEZONE, a weekly
// series with an override, single events.
func BenchmarkMapCalendar(b *testing.B) {
	cal := readCalendar(b, "google.ics")
	m := mustCompile(b, "lib", nil)
	b.ReportAllocs()
	for b.Loop() {
		if len(m.MapCalendar(cal, icalNow)) == 0 {
			b.Fatal("no results")
		}
	}
}
