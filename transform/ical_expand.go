package transform

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/emersion/go-ical"
	"github.com/teambition/rrule-go"
)

// Bounds on one series' expansion, so that a hostile or broken rule
// (FREQ=SECONDLY from 1970) costs a bounded amount of work: the
// occurrences read from the rule, and those kept in the window.
const (
	maxRuleSteps   = 200_000
	maxOccurrences = 2_000
)

// errTooMany reports a series cut at maxOccurrences or maxRuleSteps.
var errTooMany = errors.New("recurrence expands to too many occurrences")

// when is a parsed DTSTART, DTEND, RECURRENCE-ID, RDATE or EXDATE value.
type when struct {
	wall     time.Time // the wall clock's fields, in UTC
	z        zone
	dateOnly bool
}

func (w when) instant() time.Time {
	if w.dateOnly {
		return w.wall // all-day dates are read at 00:00 UTC
	}
	return w.z.instant(w.wall)
}

// recurKey names an instance by its original start: the date of an
// all-day series, else the UTC instant.
func (w when) recurKey() string {
	if w.dateOnly {
		return w.wall.Format("20060102")
	}
	return w.instant().Format("20060102T150405Z")
}

// parseWhen reads a date or date-time value v with the property's TZID
// (params may be nil).
func (zs *zones) parseWhen(v string, params ical.Params) (when, error) {
	wall, utc, ok := wallTime(v)
	if !ok {
		return when{}, fmt.Errorf("%q is not an iCalendar date or date-time", clip(v))
	}
	w := when{wall: wall, z: zs.floating, dateOnly: len(strings.TrimSpace(v)) == 8}
	switch {
	case w.dateOnly:
		w.z = locZone{time.UTC}
	case utc:
		w.z = locZone{time.UTC}
	case params != nil && params.Get(ical.PropTimezoneID) != "":
		tzid := params.Get(ical.PropTimezoneID)
		if z, ok := zs.zone(tzid); ok {
			w.z = z
		} else {
			zs.unknown[tzid] = true
		}
	}
	return w, nil
}

func (zs *zones) propWhen(c *ical.Component, name string) (when, bool, error) {
	p := c.Props.Get(name)
	if p == nil {
		return when{}, false, nil
	}
	w, err := zs.parseWhen(p.Value, p.Params)
	if err != nil {
		return when{}, true, fmt.Errorf("%s: %w", name, err)
	}
	return w, true, nil
}

// span is an event's length: on the wall clock for timed events (so that
// an occurrence after a DST change keeps its local end time), in days for
// all-day ones. has is false when the event gives no end.
type span struct {
	d   time.Duration
	has bool
}

func (zs *zones) spanOf(c *ical.Component, start when) (span, error) {
	end, ok, err := zs.propWhen(c, ical.PropDateTimeEnd)
	if err != nil {
		return span{}, err
	}
	if ok {
		endWall := end.wall
		if !start.dateOnly && !end.dateOnly {
			endWall = start.z.wall(end.instant())
		}
		if endWall.Before(start.wall) {
			return span{}, nil // an inverted end is dropped, as for feeds
		}
		return span{d: endWall.Sub(start.wall), has: true}, nil
	}
	if p := c.Props.Get(ical.PropDuration); p != nil {
		d, err := p.Duration()
		if err != nil {
			return span{}, fmt.Errorf("DURATION: %q: %w", clip(p.Value), err)
		}
		if d >= 0 {
			return span{d: d, has: true}, nil
		}
	}
	return span{}, nil
}

// occurrenceAt makes the occurrence starting at wall clock time start.
func occurrenceAt(c *ical.Component, start when, sp span, key string) occurrence {
	o := occurrence{comp: c, allDay: start.dateOnly, key: key, start: start.instant()}
	switch {
	case start.dateOnly:
		// All-day: the API gets the first day at 00:00 UTC and, for an
		// event of several days, the last day (DTEND is exclusive).
		if days := int(sp.d / (24 * time.Hour)); sp.has && days > 1 {
			o.end = o.start.Add(time.Duration(days-1) * 24 * time.Hour)
		}
	case sp.has:
		o.end = start.z.instant(start.wall.Add(sp.d))
	}
	return o
}

// expandSeries returns the occurrences of one UID: the master's (one, or
// one per instance of its recurrence in [from, to]), each replaced by the
// override of the same RECURRENCE-ID, and then the overrides that replace
// no generated occurrence (an instance moved into the window, or a file
// with overrides only).
func expandSeries(zs *zones, uid string, master *ical.Component, overrides []*ical.Component, from, to time.Time) ([]occurrence, []occurrence, error) {
	type override struct {
		c   *ical.Component
		rid when
	}
	byKey := map[string]override{}
	var keys []string
	for _, c := range overrides {
		rid, _, err := zs.propWhen(c, ical.PropRecurrenceID)
		if err != nil {
			return nil, nil, err
		}
		k := rid.recurKey()
		if prev, dup := byKey[k]; !dup || sequence(c) >= sequence(prev.c) {
			if !dup {
				keys = append(keys, k)
			}
			byKey[k] = override{c, rid}
		}
	}
	// An override's times are its own DTSTART/DTEND; without DTSTART the
	// instance keeps its original start.
	overrideOcc := func(ov override, key string) (occurrence, error) {
		start, ok, err := zs.propWhen(ov.c, ical.PropDateTimeStart)
		if err != nil {
			return occurrence{}, err
		}
		if !ok {
			start = ov.rid
		}
		sp, err := zs.spanOf(ov.c, start)
		if err != nil {
			return occurrence{}, err
		}
		return occurrenceAt(ov.c, start, sp, key), nil
	}

	var occs []occurrence
	if master != nil {
		start, ok, err := zs.propWhen(master, ical.PropDateTimeStart)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, nil, errors.New("no DTSTART")
		}
		sp, err := zs.spanOf(master, start)
		if err != nil {
			return nil, nil, err
		}
		recurring := master.Props.Get(ical.PropRecurrenceRule) != nil || master.Props.Get(ical.PropRecurrenceDates) != nil
		if !recurring {
			occs = append(occs, occurrenceAt(master, start, sp, "ical:"+uid))
		} else {
			walls, err := zs.expand(master, start, sp, from, to)
			if err != nil {
				return nil, nil, err
			}
			for _, w := range walls {
				inst := when{wall: w, z: start.z, dateOnly: start.dateOnly}
				k := inst.recurKey()
				key := "ical:" + uid + "#" + k
				if ov, ok := byKey[k]; ok {
					o, err := overrideOcc(ov, key)
					if err != nil {
						return nil, nil, err
					}
					occs = append(occs, o)
					delete(byKey, k)
					continue
				}
				occs = append(occs, occurrenceAt(master, inst, sp, key))
			}
		}
	}
	var rest []occurrence
	for _, k := range keys {
		ov, ok := byKey[k]
		if !ok {
			continue
		}
		o, err := overrideOcc(ov, "ical:"+uid+"#"+k)
		if err != nil {
			return nil, nil, err
		}
		rest = append(rest, o)
	}
	slices.SortFunc(occs, byStart)
	return occs, rest, nil
}

// untilUTC finds an UNTIL written in UTC (with Z), which is an instant
// rather than a wall time.
var untilUTC = regexp.MustCompile(`(?i)(^|;)UNTIL=\d{8}T\d{6}Z(;|$)`)

// expand returns the wall clock starts of the master's instances (RRULE,
// RDATE and DTSTART itself, less EXDATE) that may fall in [from, to].
func (zs *zones) expand(c *ical.Component, start when, sp span, from, to time.Time) ([]time.Time, error) {
	set := &rrule.Set{}
	// DTSTART is always the first instance (RFC 5545 3.8.5.3), whether or
	// not the rule matches it.
	set.RDate(start.wall)
	if p := c.Props.Get(ical.PropRecurrenceRule); p != nil {
		ro, err := rrule.StrToROptionInLocation(p.Value, time.UTC)
		if err != nil {
			return nil, fmt.Errorf("RRULE %q: %w", clip(p.Value), err)
		}
		ro.Dtstart = start.wall
		if !ro.Until.IsZero() && !start.dateOnly && untilUTC.MatchString(p.Value) {
			ro.Until = start.z.wall(ro.Until)
		}
		r, err := rrule.NewRRule(*ro)
		if err != nil {
			return nil, fmt.Errorf("RRULE %q: %w", clip(p.Value), err)
		}
		set.RRule(r)
	}
	dates := func(name string, add func(time.Time)) error {
		for _, p := range c.Props.Values(name) {
			for v := range strings.SplitSeq(p.Value, ",") {
				v, _, _ = strings.Cut(v, "/") // a PERIOD's start
				w, err := zs.parseWhen(v, p.Params)
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				switch {
				case start.dateOnly:
					add(time.Date(w.wall.Year(), w.wall.Month(), w.wall.Day(), 0, 0, 0, 0, time.UTC))
				case w.dateOnly:
					// A date against a timed series names that day's instance.
					add(time.Date(w.wall.Year(), w.wall.Month(), w.wall.Day(), start.wall.Hour(), start.wall.Minute(), start.wall.Second(), 0, time.UTC))
				default:
					add(start.z.wall(w.instant()))
				}
			}
		}
		return nil
	}
	if err := dates(ical.PropRecurrenceDates, set.RDate); err != nil {
		return nil, err
	}
	if err := dates(ical.PropExceptionDates, set.ExDate); err != nil {
		return nil, err
	}

	// The window on the wall clock, widened by a day each side for zone
	// offsets and by the event's length at the start, so that an instance
	// still running at from is kept; the caller trims to the exact window.
	lo := start.z.wall(from).Add(-sp.d - 24*time.Hour)
	hi := start.z.wall(to).Add(24 * time.Hour)
	var out []time.Time
	next := set.Iterator()
	for range maxRuleSteps {
		w, ok := next()
		if !ok || w.After(hi) {
			return out, nil
		}
		if w.Before(lo) {
			continue
		}
		if len(out) == maxOccurrences {
			return nil, fmt.Errorf("%w in the window (more than %d)", errTooMany, maxOccurrences)
		}
		out = append(out, w)
	}
	return nil, fmt.Errorf("%w: more than %d instances before the window ends", errTooMany, maxRuleSteps)
}
