package transform

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/emersion/go-ical"
	"github.com/teambition/rrule-go"
)

// iCalendar times are wall-clock times in a zone named by TZID. Recurrence
// rules run on the wall clock ("every Tuesday at 10:00" stays at 10:00
// across a DST change), so expansion works on wall times, held as
// time.Time values in UTC whose fields are the wall clock's, and only each
// occurrence is then turned into an instant by its zone.

// zone turns wall-clock times of one TZID into instants and back.
type zone interface {
	// instant is the moment the wall-clock time w (its fields) means.
	instant(w time.Time) time.Time
	// wall is the wall-clock time of the instant t.
	wall(t time.Time) time.Time
}

// locZone is a zone of Go's time zone database (an IANA name).
type locZone struct{ loc *time.Location }

func (z locZone) instant(w time.Time) time.Time {
	return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), 0, z.loc).UTC()
}

func (z locZone) wall(t time.Time) time.Time {
	l := t.In(z.loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), 0, time.UTC)
}

// vtimezone is a VTIMEZONE of the calendar itself: its STANDARD and
// DAYLIGHT observances, each an onset (DTSTART, a wall time in the offset
// before it, TZOFFSETFROM), repeated by an RRULE and RDATEs, after which
// TZOFFSETTO applies.
type vtimezone struct{ obs []observance }

type observance struct {
	from, to time.Duration
	start    time.Time // first onset, wall clock in the "from" offset
	// onsets are every onset (DTSTART, its RRULE's and RDATE's), in
	// order, read once: a zone converts many times per calendar.
	onsets []time.Time
}

// maxOnsetScan bounds the onsets read from one observance's rule, so that
// a hostile rule cannot make a zone cost more than this.
const maxOnsetScan = 4000

// lastOnset is the latest onset of o whose wall time (in o's from-offset)
// is at or before w; ok is false when there is none.
func (o *observance) lastOnset(w time.Time) (time.Time, bool) {
	i := sort.Search(len(o.onsets), func(i int) bool { return o.onsets[i].After(w) })
	if i == 0 {
		return time.Time{}, false
	}
	return o.onsets[i-1], true
}

// current returns the observance in force at a time; at(o) converts that
// time into o's from-offset wall clock.
func (z *vtimezone) current(at func(o *observance) time.Time) *observance {
	var cur *observance
	var curInstant time.Time
	for i := range z.obs {
		o := &z.obs[i]
		onset, ok := o.lastOnset(at(o))
		if !ok {
			continue
		}
		inst := onset.Add(-o.from)
		if cur == nil || inst.After(curInstant) {
			cur, curInstant = o, inst
		}
	}
	if cur == nil && len(z.obs) > 0 {
		// Before every onset: the offset the earliest one starts from.
		first := &z.obs[0]
		for i := range z.obs {
			if z.obs[i].start.Before(first.start) {
				first = &z.obs[i]
			}
		}
		return &observance{to: first.from}
	}
	return cur
}

func (z *vtimezone) instant(w time.Time) time.Time {
	o := z.current(func(*observance) time.Time { return w })
	return w.Add(-o.to)
}

func (z *vtimezone) wall(t time.Time) time.Time {
	o := z.current(func(o *observance) time.Time { return t.Add(o.from) })
	return t.Add(o.to).UTC()
}

// parseVTimezone reads a VTIMEZONE; nil when it has no usable observance.
// Onsets are read for the years fromYear-2 to toYear+1 only (a calendar is mapped
// within a window, and its zone rules are written from 1601 or 1970 on):
// a yearly rule's onsets in a year do not depend on the year it started,
// so its start moves up to the first year needed.
func parseVTimezone(c *ical.Component, fromYear, toYear int) *vtimezone {
	z := &vtimezone{}
	for _, child := range c.Children {
		if child.Name != "STANDARD" && child.Name != "DAYLIGHT" {
			continue
		}
		from, ok1 := utcOffset(child.Props.Get("TZOFFSETFROM"))
		to, ok2 := utcOffset(child.Props.Get("TZOFFSETTO"))
		ds := child.Props.Get(ical.PropDateTimeStart)
		if !ok1 || !ok2 || ds == nil {
			continue
		}
		start, _, ok := wallTime(ds.Value)
		if !ok {
			continue
		}
		o := observance{from: from, to: to, start: start, onsets: []time.Time{start}}
		if rr := child.Props.Get(ical.PropRecurrenceRule); rr != nil {
			if ro, err := rrule.StrToROptionInLocation(rr.Value, time.UTC); err == nil {
				ro.Dtstart = start
				if !ro.Until.IsZero() && untilUTC.MatchString(rr.Value) {
					// UNTIL in UTC: as a wall time in the from-offset.
					ro.Until = ro.Until.Add(from)
				}
				if ro.Freq == rrule.YEARLY && ro.Interval <= 1 && ro.Count == 0 && len(ro.Bymonth) > 0 && start.Year() < fromYear-2 {
					ro.Dtstart = time.Date(fromYear-2, 1, 1, start.Hour(), start.Minute(), start.Second(), 0, time.UTC)
				}
				if r, err := rrule.NewRRule(*ro); err == nil {
					next := r.Iterator()
					for range maxOnsetScan {
						t, ok := next()
						if !ok || t.Year() > toYear+1 {
							break
						}
						o.onsets = append(o.onsets, t)
					}
				}
			}
		}
		for _, p := range child.Props.Values(ical.PropRecurrenceDates) {
			for v := range strings.SplitSeq(p.Value, ",") {
				if t, _, ok := wallTime(v); ok {
					o.onsets = append(o.onsets, t)
				}
			}
		}
		slices.SortFunc(o.onsets, time.Time.Compare)
		o.onsets = slices.CompactFunc(o.onsets, time.Time.Equal)
		z.obs = append(z.obs, o)
	}
	if len(z.obs) == 0 {
		return nil
	}
	return z
}

// utcOffset reads a UTC-OFFSET value: +HHMM, -HHMM or ±HHMMSS.
func utcOffset(p *ical.Prop) (time.Duration, bool) {
	if p == nil {
		return 0, false
	}
	v := strings.TrimSpace(p.Value)
	if len(v) != 5 && len(v) != 7 || (v[0] != '+' && v[0] != '-') {
		return 0, false
	}
	num := func(s string) (int, bool) {
		if s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
			return 0, false
		}
		return int(s[0]-'0')*10 + int(s[1]-'0'), true
	}
	h, ok1 := num(v[1:3])
	m, ok2 := num(v[3:5])
	s, ok3 := 0, true
	if len(v) == 7 {
		s, ok3 = num(v[5:7])
	}
	if !ok1 || !ok2 || !ok3 {
		return 0, false
	}
	d := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second
	if v[0] == '-' {
		d = -d
	}
	return d, true
}

// wallTime parses a DATE (YYYYMMDD) or DATE-TIME (YYYYMMDDTHHMMSS, with Z
// for UTC) value into its fields, held in UTC. utc reports a Z value,
// which is an instant rather than a wall time.
func wallTime(v string) (t time.Time, utc, ok bool) {
	v = strings.TrimSpace(v)
	var err error
	switch {
	case len(v) == 8:
		t, err = time.Parse("20060102", v)
	case len(v) == 15:
		t, err = time.Parse("20060102T150405", v)
	case len(v) == 16 && (v[15] == 'Z' || v[15] == 'z'):
		t, err = time.Parse("20060102T150405", v[:15])
		utc = true
	default:
		return time.Time{}, false, false
	}
	return t, utc, err == nil
}

// zones resolves TZIDs for one calendar, caching each.
type zones struct {
	from, to int // the years of the mapping window
	vtz      map[string]*ical.Component
	cache    map[string]zone
	floating zone // for times without TZID or Z
	// unknown are the TZIDs nothing resolved; their times were read in
	// the floating zone.
	unknown map[string]bool
}

func newZones(cal *ical.Calendar, floating zone, from, to time.Time) *zones {
	z := &zones{from: from.Year(), to: to.Year(), vtz: map[string]*ical.Component{}, cache: map[string]zone{}, floating: floating, unknown: map[string]bool{}}
	for _, c := range cal.Children {
		if c.Name == ical.CompTimezone {
			if id := strings.TrimSpace(propRaw(c.Props, ical.PropTimezoneID)); id != "" {
				z.vtz[id] = c
			}
		}
	}
	return z
}

// zone resolves a TZID: the calendar's own VTIMEZONE of that id, else an
// IANA name (also as the tail of a path such as Mozilla's
// "/mozilla.org/20050126_1/Europe/Berlin"), else a Windows zone name as
// Outlook writes them. ok is false for an id nothing knows; the caller
// then uses the floating zone.
func (z *zones) zone(tzid string) (zone, bool) {
	tzid = strings.Trim(strings.TrimSpace(tzid), `"`)
	if c, hit := z.cache[tzid]; hit {
		return c, c != nil
	}
	var out zone
	if c := z.vtz[tzid]; c != nil {
		if vz := parseVTimezone(c, z.from, z.to); vz != nil {
			out = vz
		}
	}
	if out == nil {
		if loc := ianaZone(tzid); loc != nil {
			out = locZone{loc}
		}
	}
	if out == nil {
		if name, ok := windowsZones[tzid]; ok {
			if loc := ianaZone(name); loc != nil {
				out = locZone{loc}
			}
		}
	}
	z.cache[tzid] = out
	return out, out != nil
}

// ianaZone loads an IANA zone by name or by the tail of a path; nil when
// none loads. "Local" and "" never do: the host's zone must not matter.
func ianaZone(name string) *time.Location {
	for name != "" {
		if !strings.EqualFold(name, "local") {
			if loc, err := time.LoadLocation(name); err == nil {
				return loc
			}
		}
		_, rest, ok := strings.Cut(name, "/")
		if !ok {
			break
		}
		name = rest
	}
	return nil
}
