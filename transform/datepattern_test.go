package transform

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/config"
)

// TestEventDatesFromTitles maps a real tour-dates feed whose items carry
// their date only in the title ("04/03/2006: Manchester, NH").
func TestEventDatesFromTitles(t *testing.T) {
	t.Parallel()
	feed := loadTestFeed(t, filepath.Join("testdata", "feeds", "rome__rss2.0-w3cgeo.xml"))
	cases := []struct {
		name      string
		event     config.EventFields
		wantStart []string // per item, "" for skipped
		allDay    bool
	}{
		{
			name:      "pattern and layout",
			event:     config.EventFields{Start: "title", DatePattern: `^(?P<date>\d{2}/\d{2}/\d{4})`, DateLayout: "01/02/2006"},
			wantStart: []string{"2006-04-03 00:00", "2006-04-04 00:00", "2006-04-06 00:00", "2006-09-06 00:00"},
			allDay:    true,
		},
		{
			name: "layout with a time in a named zone",
			event: config.EventFields{Start: "title", DatePattern: `^(\d{2}/\d{2}/\d{4})`, DateLayout: "01/02/2006",
				TimeZoneName: "America/New_York"},
			// Midnight in New York is 04:00 or 05:00 UTC.
			wantStart: []string{"2006-04-03 04:00", "2006-04-04 04:00", "2006-04-06 04:00", "2006-09-06 04:00"},
			allDay:    true,
		},
		{
			name:      "pattern that does not match skips the item",
			event:     config.EventFields{Start: "title", DatePattern: `^(\d{4}-\d{2}-\d{2})`},
			wantStart: []string{"", "", "", ""},
		},
		{
			name:      "no pattern: a title is not a date",
			event:     config.EventFields{Start: "title"},
			wantStart: []string{"", "", "", ""},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mustCompile(t, "tour", func(cm *config.Mapping) {
				cm.Type = TypeEvent
				ev := c.event
				cm.Event = &ev
			})
			results := m.Map(feed, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			if len(results) != len(c.wantStart) {
				t.Fatalf("%d results, want %d", len(results), len(c.wantStart))
			}
			for i, r := range results {
				want := c.wantStart[i]
				if want == "" {
					if r.Skip == "" || !strings.Contains(r.Skip, "event start") {
						t.Errorf("item %d: skip = %q, want an event-start reason", i, r.Skip)
					}
					continue
				}
				if r.Payload == nil {
					t.Fatalf("item %d skipped: %s", i, r.Skip)
				}
				ev := r.Payload.Event
				if got := ev.Start.Format("2006-01-02 15:04"); got != want {
					t.Errorf("item %d start = %s, want %s", i, got, want)
				}
				if ev.AllDay == nil || *ev.AllDay != c.allDay {
					t.Errorf("item %d all_day = %v, want %v", i, ev.AllDay, c.allDay)
				}
			}
		})
	}
}

func TestEventDateSettingsAreChecked(t *testing.T) {
	t.Parallel()
	cases := map[string]config.EventFields{
		"event.date_pattern":   {DatePattern: `(`},
		"event.time_zone_name": {TimeZoneName: "Mars/Olympus_Mons"},
	}
	for path, ev := range cases {
		_, err := Compile("f", config.Mapping{Type: TypeEvent, Event: &ev})
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%+v: error %v, want one naming %s", ev, err, path)
		}
	}
	// A pattern without a group cannot say where the date is.
	ev := config.EventFields{DatePattern: `\d+/\d+/\d+`}
	if _, err := Compile("f", config.Mapping{Type: TypeEvent, Event: &ev}); err == nil || !strings.Contains(err.Error(), "group") {
		t.Errorf("pattern without a group: error %v, want one asking for a group", err)
	}
}
