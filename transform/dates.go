package transform

import (
	"strings"
	"time"
)

// zoneOffsets are the zone abbreviations RSS dates use in practice. Go's
// parser gives unknown abbreviations a zero offset, or the offset the
// machine's local zone has for them, so they are resolved here instead.
func zoneOffset(abbr string) (int, bool) {
	h := 0
	switch strings.ToUpper(abbr) {
	case "UT", "UTC", "GMT", "Z", "WET":
		h = 0
	case "EST":
		h = -5
	case "EDT", "AST":
		h = -4
	case "CST":
		h = -6
	case "CDT":
		h = -5
	case "MST":
		h = -7
	case "MDT":
		h = -6
	case "PST":
		h = -8
	case "PDT":
		h = -7
	case "AKST":
		h = -9
	case "AKDT":
		h = -8
	case "HST":
		h = -10
	case "BST", "CET", "WEST":
		h = 1
	case "CEST", "EET":
		h = 2
	case "EEST", "MSK":
		h = 3
	case "IST":
		return 5*3600 + 1800, true
	case "JST", "KST":
		h = 9
	case "AEST":
		h = 10
	case "AEDT":
		h = 11
	default:
		return 0, false
	}
	return h * 3600, true
}

// parseDate reads a date in the formats feeds use for extension values:
// RFC 3339 and its relatives, RFC 1123/822 with or without seconds and
// weekday, the iCalendar basic format (20061201T100000Z), and date-only
// forms, which it reports as allDay (midnight UTC of that day, so the date
// never shifts). Times without a zone are read in loc. The result is in UTC.
func parseDate(s string, loc *time.Location) (t time.Time, allDay, ok bool) {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) < 6 || len(s) > 64 {
		return time.Time{}, false, false
	}
	if loc == nil {
		loc = time.UTC
	}
	// Layouts, most common first. Layouts with a zone give an
	// absolute time; "floating" layouts are read in the event's time zone (UTC
	// when it has none); date-only layouts mark an all-day value.
	zonedLayouts := []string{
		time.RFC3339Nano,
		"2006-01-02T15:04Z07:00",
		"2006-01-02T15:04Z0700",
		"2006-01-02T15:04:05Z0700",
		"2006-01-02T15:04:05.999999999Z0700",
		"2006-01-02T15:04:05-07",
		"2006-01-02 15:04:05Z07:00",
		"2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05 Z07:00",
		"2006-01-02 15:04:05 -0700",
		"2006-01-02 15:04:05 MST",
		"2006-01-02 15:04 -0700",
		"2006-01-02 15:04 MST",
		"20060102T150405Z0700", // iCalendar / xCal basic format: 20061201T100000Z
		"20060102T1504Z0700",
		"Mon, 2 Jan 2006 15:04:05 -0700",
		"Mon, 2 Jan 2006 15:04:05 MST",
		"Mon, 2 Jan 2006 15:04 -0700",
		"Mon, 2 Jan 2006 15:04 MST",
		"Mon, 2 January 2006 15:04:05 -0700",
		"Mon, 2 January 2006 15:04:05 MST",
		"2 Jan 2006 15:04:05 -0700",
		"2 Jan 2006 15:04:05 MST",
		"2 Jan 2006 15:04 -0700",
		"2 Jan 2006 15:04 MST",
		"Monday, 02-Jan-06 15:04:05 MST", // RFC 850
		"Mon Jan _2 15:04:05 MST 2006",   // Unix date
		"Mon, 2 Jan 2006 3:04 pm MST",
		"Mon, 2 Jan 2006 3:04:05 pm MST",
	}
	floatingLayouts := []string{
		"2006-01-02T15:04:05.999999999",
		"2006-01-02T15:04",
		"2006-01-02 15:04:05",
		"2006-01-02 15:04",
		"20060102T150405",
		"20060102T1504",
		"Mon, 2 Jan 2006 15:04:05",
		"Mon, 2 Jan 2006 15:04",
		"2 Jan 2006 15:04:05",
		"2 Jan 2006 15:04",
		"Mon Jan _2 15:04:05 2006", // ANSI C
		"January 2, 2006 15:04",
		"January 2, 2006 3:04 pm",
		"Jan 2, 2006 3:04 pm",
	}
	dateOnlyLayouts := []string{
		"2006-01-02",
		"20060102",
		"2006/01/02",
		"January 2, 2006",
		"Jan 2, 2006",
		"Mon, January 2, 2006",
		"Mon, Jan 2, 2006",
		"2 January 2006",
		"2 Jan 2006",
		"Mon, 2 Jan 2006",
	}
	for _, l := range zonedLayouts {
		if v, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			v = fixZone(v)
			return saneDate(v.UTC(), false)
		}
	}
	for _, l := range floatingLayouts {
		if v, err := time.ParseInLocation(l, s, loc); err == nil {
			return saneDate(v.UTC(), false)
		}
	}
	for _, l := range dateOnlyLayouts {
		if v, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return saneDate(v, true)
		}
	}
	return time.Time{}, false, false
}

// fixZone gives a time parsed with a zone abbreviation its real offset.
func fixZone(t time.Time) time.Time {
	name, off := t.Zone()
	if off != 0 || name == "" || name == "UTC" {
		return t
	}
	if o, ok := zoneOffset(name); ok {
		return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.FixedZone(name, o))
	}
	// An abbreviation nobody agrees on: read it as UTC rather than guess.
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// saneDate rejects years no real item has, which come from placeholder
// values ("0000-00-00", "9999-12-31") and two-digit-year mistakes.
func saneDate(t time.Time, allDay bool) (time.Time, bool, bool) {
	if y := t.Year(); y < 1900 || y > 2999 {
		return time.Time{}, false, false
	}
	return t, allDay, true
}

// itemDate returns the item's publish date: published, else updated, else
// zero. gofeed has parsed most; the raw text is tried again for the forms it
// does not know. Never the clock: see the package comment.
func itemDate(published, updated *time.Time, publishedRaw, updatedRaw string) time.Time {
	for _, p := range []*time.Time{published, updated} {
		if p != nil {
			if t, _, ok := saneDate(p.UTC(), false); ok {
				return t
			}
		}
	}
	for _, raw := range []string{publishedRaw, updatedRaw} {
		if t, _, ok := parseDate(raw, time.UTC); ok {
			return t
		}
	}
	return time.Time{}
}
