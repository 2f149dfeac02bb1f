package transform

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mmcdole/gofeed"
)

// eventFields reads an Event's fields from the item's extensions. It
// returns a reason to skip the item when the event has no usable start.
//
// Times without a zone are read in the zone the item names (event.time_zone,
// else xCal:tzid), as an IANA name such as "Europe/Paris"; UTC otherwise.
// A date-only start makes an all-day event unless event.all_day says
// otherwise.
func (m *Mapping) eventFields(item *gofeed.Item, base *url.URL, zones map[string]*time.Location) (*Event, string) {
	p := m.event
	loc := time.UTC
	if p.zone != nil {
		loc = p.zone
	}
	if name, _ := firstValue(item, p.timeZone); name != "" {
		loc = lookupZone(name, zones)
	}

	startRaw, startPath := firstValue(item, p.start)
	if startRaw == "" {
		return nil, "no event start: nothing at " + pathList(p.start)
	}
	start, dateOnly, ok := p.readDate(startRaw, loc)
	if !ok {
		return nil, fmt.Sprintf("bad event start: %q at %s is not a date", clip(startRaw), startPath)
	}
	ev := &Event{Start: start, TimeZoneID: copyPtr(p.timeZoneID)}
	if endRaw, _ := firstValue(item, p.end); endRaw != "" {
		// An unreadable or inverted end is dropped, not fatal: the start
		// is what the event needs.
		if end, _, ok := p.readDate(endRaw, loc); ok && !end.Before(start) {
			ev.End = end
		}
	}
	if v, _ := firstValue(item, p.allDay); v != "" {
		if b, ok := parseBool(v); ok {
			ev.AllDay = &b
		}
	}
	if ev.AllDay == nil && dateOnly {
		t := true
		ev.AllDay = &t
	}
	text := func(paths []extPath) string {
		v, _ := firstValue(item, paths)
		return plainText(v)
	}
	ev.Location = text(p.location)
	ev.StreetAddress = text(p.street)
	ev.City = text(p.city)
	ev.PostalCode = text(p.postalCode)
	ev.Region = text(p.region)
	ev.Country = text(p.country)
	if v, _ := firstValue(item, p.registrationURL); v != "" {
		if u, ok := absoluteURL(v, base); ok {
			ev.RegistrationURL = u.String()
		}
	}
	return ev, ""
}

// needFields reads a Need's quantity and by-date. A Need must have a
// quantity (from need.quantity, else need.default_quantity). The by-date is
// optional, as in the API: an item without one gets need.default_by_days
// after its publication date (published, a date computed from the item and
// so stable across polls) or none.
func (m *Mapping) needFields(item *gofeed.Item, published time.Time) (*Need, string) {
	p := m.need
	n := &Need{}
	if raw, path := firstValue(item, p.quantity); raw != "" {
		q, ok := parseQuantity(raw)
		if !ok {
			return nil, fmt.Sprintf("bad need quantity: %q at %s is not a number", clip(raw), path)
		}
		n.Quantity = &q
	} else if p.defaultQuantity != nil {
		n.Quantity = copyPtr(p.defaultQuantity)
	} else {
		return nil, "no need quantity: nothing at " + pathList(p.quantity) + " and no default_quantity"
	}
	if len(p.byDate) > 0 {
		if raw, path := firstValue(item, p.byDate); raw != "" {
			t, _, ok := parseDate(raw, time.UTC)
			if !ok {
				return nil, fmt.Sprintf("bad need by-date: %q at %s is not a date", clip(raw), path)
			}
			n.ByDate = t
		}
	}
	if n.ByDate.IsZero() && p.defaultByDays != nil && !published.IsZero() {
		n.ByDate = published.UTC().AddDate(0, 0, *p.defaultByDays)
	}
	return n, ""
}

// firstValue returns the first non-empty value of paths, and the path.
func firstValue(item *gofeed.Item, paths []extPath) (string, string) {
	for _, p := range paths {
		if v := p.value(item); v != "" {
			return v, p.raw
		}
	}
	return "", ""
}

func pathList(paths []extPath) string {
	if len(paths) == 0 {
		return "no configured path"
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = p.raw
	}
	return strings.Join(names, ", ")
}

// lookupZone loads an IANA zone once per Map call. An unknown name reads as
// UTC: a wrong zone in one feed must not stop its events.
func lookupZone(name string, cache map[string]*time.Location) *time.Location {
	if loc, ok := cache[name]; ok {
		return loc
	}
	loc, err := time.LoadLocation(name)
	if err != nil || name == "" || strings.EqualFold(name, "local") {
		loc = time.UTC // "Local" would make the result depend on the host
	}
	cache[name] = loc
	return loc
}

// parseQuantity reads the leading whole number of values such as "25",
// "1,000" or "25 volunteers".
func parseQuantity(s string) (int, bool) {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || (s[end] == ',' && end > 0)) {
		end++
	}
	digits := strings.ReplaceAll(strings.TrimRight(s[:end], ","), ",", "")
	if digits == "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n > 1<<31-1 {
		return 0, false
	}
	return n, true
}

func parseBool(s string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "y", "1", "on":
		return true, true
	case "false", "no", "n", "0", "off":
		return false, true
	}
	return false, false
}

// clip shortens a value quoted in a skip reason.
func clip(s string) string { return truncate(s, 60) }

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// readDate parses an event date value: the date_pattern's group when the
// feed writes dates inside other text, read with date_layout when one is
// set, else with the usual feed formats.
func (p *eventPaths) readDate(raw string, loc *time.Location) (t time.Time, dateOnly, ok bool) {
	if p.datePattern != nil {
		m := p.datePattern.FindStringSubmatch(raw)
		if m == nil || m[p.dateGroup] == "" {
			return time.Time{}, false, false
		}
		raw = m[p.dateGroup]
	}
	if p.dateLayout == "" {
		return parseDate(raw, loc)
	}
	t, err := time.ParseInLocation(p.dateLayout, strings.TrimSpace(raw), loc)
	if err != nil {
		return time.Time{}, false, false
	}
	// A layout that cannot tell two times of one day apart names a day:
	// an all-day event.
	day := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	dateOnly = day.Format(p.dateLayout) == day.Add(13*time.Hour+45*time.Minute+30*time.Second).Format(p.dateLayout)
	return t.UTC(), dateOnly, true
}
