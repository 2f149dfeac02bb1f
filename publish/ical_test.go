package publish

import (
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/transform"
)

func TestICalAction(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	yes := true
	ev := func(start, end time.Time, allDay bool) *transform.Payload {
		p := &transform.Payload{Type: transform.TypeEvent, Event: &transform.Event{Start: start, End: end}}
		if allDay {
			p.Event.AllDay = &yes
		}
		return p
	}
	today := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name        string
		p           *transform.Payload
		initialPast bool
		want        dedupe.Action
	}{
		{"upcoming", ev(now.Add(time.Hour), time.Time{}, false), false, dedupe.ActionPublish},
		{"running", ev(now.Add(-time.Hour), now.Add(time.Hour), false), false, dedupe.ActionPublish},
		{"over", ev(now.Add(-2*time.Hour), now.Add(-time.Hour), false), false, dedupe.ActionSeeOnly},
		{"over, initial_past", ev(now.Add(-2*time.Hour), now.Add(-time.Hour), false), true, dedupe.ActionPublish},
		{"all day today", ev(today, time.Time{}, true), false, dedupe.ActionPublish},
		{"all day yesterday", ev(today.Add(-24*time.Hour), time.Time{}, true), false, dedupe.ActionSeeOnly},
		{"cancelled", func() *transform.Payload {
			p := ev(now.Add(time.Hour), time.Time{}, false)
			p.Cancelled = true
			return p
		}(), true, dedupe.ActionSeeOnly},
	} {
		if got := icalAction(tt.p, &ICalOptions{InitialPast: tt.initialPast}, now); got != tt.want {
			t.Errorf("%s: action %q, want %q", tt.name, got, tt.want)
		}
	}
}
