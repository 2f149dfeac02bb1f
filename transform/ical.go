package transform

import (
	"cmp"
	"fmt"
	"html"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-ical"
	"github.com/mmcdole/gofeed"

	"github.com/feedworker/feedworker/config"
)

// icalRules are a feed's compiled ical settings.
type icalRules struct {
	window, back  time.Duration
	keepCancelled bool
}

// icalRulesOf compiles c; def (the built-in ical section) fills what a
// Mapping compiled without config.Load leaves unset.
func icalRulesOf(c, def config.ICal) icalRules {
	r := icalRules{window: def.Window.D(), back: def.WindowBack.D()}
	if c.Window != nil {
		r.window = c.Window.D()
	}
	if c.WindowBack != nil {
		r.back = c.WindowBack.D()
	}
	r.keepCancelled = c.OnCancel != nil && *c.OnCancel == "keep"
	return r
}

// Window returns the span of time MapCalendar maps occurrences in, around
// now: from now minus ical.window_back to now plus ical.window.
func (m *Mapping) Window(now time.Time) (from, to time.Time) {
	return now.Add(-m.ical.back), now.Add(m.ical.window)
}

// occurrence is one instance of an event: the VEVENT whose fields apply
// (the series, or the override of this instance) and its times.
type occurrence struct {
	comp       *ical.Component
	start, end time.Time // instants; end zero when the event gives none
	allDay     bool
	key        string // identity: UID, plus the instance's original start for a series
}

// MapCalendar maps an iCalendar document (RFC 5545): every VEVENT becomes
// an Event, and a recurring one (RRULE, RDATE, EXDATE, with overridden
// instances carrying RECURRENCE-ID) one Event per occurrence in the window
// (see Window). Occurrences outside the window give no Result at all. now
// is the only clock, so the mapping stays pure.
//
// Identity: external ids come from UID, plus the instance's original start
// (its RECURRENCE-ID) for the occurrences of a series, so an overridden
// instance keeps the id of the occurrence it replaces. A payload's hash
// covers the mapped fields only: a new DTSTAMP or SEQUENCE with nothing
// else changed is not an update.
//
// A cancelled event or instance (STATUS:CANCELLED, or a calendar with
// METHOD:CANCEL) gives a payload with Cancelled set, which the publisher
// deletes at the API; with ical.on_cancel keep it is skipped instead.
func (m *Mapping) MapCalendar(cal *ical.Calendar, now time.Time) []Result {
	if cal == nil {
		return nil
	}
	now = now.UTC()
	from, to := m.Window(now)

	var floating zone = locZone{time.UTC}
	if m.event.zone != nil {
		floating = locZone{m.event.zone}
	}
	zs := newZones(cal, floating, from, to)
	var warnings []string
	if name := propText(cal.Props, "X-WR-TIMEZONE"); name != "" {
		if z, ok := zs.zone(name); ok {
			zs.floating = z
		} else {
			warnings = append(warnings, fmt.Sprintf("unknown calendar time zone X-WR-TIMEZONE %q: floating times read in %s", clip(name), zoneName(m)))
		}
	}
	cancelAll := strings.EqualFold(propText(cal.Props, ical.PropMethod), "CANCEL")

	// A series and its overridden instances share a UID.
	type series struct {
		master    *ical.Component
		overrides []*ical.Component
	}
	bySeries := map[string]*series{}
	var order []string
	for _, c := range cal.Children {
		if c.Name != ical.CompEvent {
			continue
		}
		uid := propText(c.Props, ical.PropUID)
		if uid == "" {
			// RFC 5545 requires a UID; without one the summary and start
			// are the best identity there is.
			uid = "nouid:" + propText(c.Props, ical.PropSummary) + "\x00" + propRaw(c.Props, ical.PropDateTimeStart)
		}
		s := bySeries[uid]
		if s == nil {
			s = &series{}
			bySeries[uid] = s
			order = append(order, uid)
		}
		if c.Props.Get(ical.PropRecurrenceID) != nil {
			s.overrides = append(s.overrides, c)
			continue
		}
		// The same event twice: the later SEQUENCE wins.
		if s.master == nil || sequence(c) >= sequence(s.master) {
			s.master = c
		}
	}

	var results []Result
	feed := &gofeed.Feed{Title: propText(cal.Props, "X-WR-CALNAME"), Description: propText(cal.Props, "X-WR-CALDESC")}
	emit := func(o occurrence, r Result) {
		if o.end.IsZero() && o.start.Before(from) || !o.end.IsZero() && o.end.Before(from) || o.start.After(to) {
			return
		}
		m.mapOccurrence(&r, feed, o, cancelAll)
		results = append(results, r)
	}
	for _, uid := range order {
		s := bySeries[uid]
		occs, overrides, err := expandSeries(zs, uid, s.master, s.overrides, from, to)
		if err != nil {
			results = append(results, Result{Err: fmt.Errorf("event %q: %w", clip(uid), err)})
			continue
		}
		for _, o := range occs {
			emit(o, Result{})
		}
		for _, o := range overrides {
			emit(o, Result{})
		}
	}

	for _, tzid := range slices.Sorted(maps.Keys(zs.unknown)) {
		warnings = append(warnings, fmt.Sprintf("unknown time zone TZID %q (no VTIMEZONE, IANA or Windows name): its times read in %s", clip(tzid), zoneName(m)))
	}
	seen := make(map[string]int, len(results))
	for i := range results {
		r := &results[i]
		if len(warnings) > 0 {
			r.Warning = strings.Join(warnings, "; ")
		}
		if r.Payload == nil {
			continue
		}
		if j, dup := seen[r.Payload.ExternalID]; dup {
			r.SkippedID = r.Payload.ExternalID
			r.Payload, r.Skip = nil, fmt.Sprintf("duplicate: same external id as event %d of this calendar", j+1)
			continue
		}
		seen[r.Payload.ExternalID] = i
	}
	return results
}

func zoneName(m *Mapping) string {
	if m.event.zone != nil {
		return m.event.zone.String()
	}
	return "UTC"
}

// mapOccurrence maps one occurrence through the feed's usual steps (type,
// filters, title, summary, image, categories, static fields, sanitizing),
// from an item made of the VEVENT's properties.
func (m *Mapping) mapOccurrence(r *Result, feed *gofeed.Feed, o occurrence, cancelAll bool) {
	c := o.comp
	cancelled := cancelAll || strings.EqualFold(propText(c.Props, ical.PropStatus), "CANCELLED")
	id := externalID(m.feedID, o.key)
	defer func() {
		if r.Payload == nil {
			r.SkippedID = id
		}
	}()
	if cancelled && m.ical.keepCancelled {
		r.Skip = "cancelled: ical.on_cancel is keep"
		return
	}
	link := ""
	if u, ok := absoluteURL(propRaw(c.Props, ical.PropURL), nil); ok {
		link = u.String()
	}
	item := &gofeed.Item{
		// The title is plain text; mapItem reads titles as HTML.
		Title:      html.EscapeString(propText(c.Props, ical.PropSummary)),
		Content:    eventBody(c),
		Link:       link,
		GUID:       o.key,
		Categories: propTextList(c.Props, ical.PropCategories),
	}
	if img := eventImage(c); img != "" {
		item.Enclosures = []*gofeed.Enclosure{{URL: img, Type: "image/"}}
	}
	allDay := o.allDay
	ev := &Event{Start: o.start, End: o.end, AllDay: &allDay, TimeZoneID: copyPtr(m.event.timeZoneID),
		Location: plainText(html.EscapeString(propText(c.Props, ical.PropLocation))), RegistrationURL: link}
	eventAddress(c, ev)
	m.mapItem(r, feed, item, id, link, nil, time.Time{}, map[string]*time.Location{}, ev, nil)
	if r.Payload != nil && cancelled {
		r.Payload.Cancelled = true
		r.Payload.Hash = r.Payload.computeHash()
	}
}

// eventBody is the VEVENT's description as HTML: the X-ALT-DESC HTML part
// where there is one, DESCRIPTION as written when it is HTML already (as
// Google Calendar writes it), else DESCRIPTION's plain text in paragraphs.
// mapItem sanitizes it.
func eventBody(c *ical.Component) string {
	for _, p := range c.Props.Values("X-ALT-DESC") {
		if strings.EqualFold(p.Params.Get("FMTTYPE"), "text/html") {
			if s := strings.TrimSpace(textOf(&p)); s != "" {
				return s
			}
		}
	}
	desc := strings.TrimSpace(propText(c.Props, ical.PropDescription))
	if desc == "" || looksLikeHTML(desc) {
		return desc
	}
	return paragraphs(desc)
}

// paragraphs turns plain text into HTML: blank lines separate paragraphs,
// single line breaks stay line breaks.
func paragraphs(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	var b strings.Builder
	for para := range strings.SplitSeq(s, "\n\n") {
		para = strings.TrimSpace(para)
		if para == "" {
			continue
		}
		lines := strings.Split(para, "\n")
		for i := range lines {
			lines[i] = html.EscapeString(strings.TrimSpace(lines[i]))
		}
		b.WriteString("<p>" + strings.Join(lines, "<br>") + "</p>")
	}
	return b.String()
}

// eventImage is the first image URL of IMAGE (RFC 7986) or ATTACH: a URI
// value with an image FMTTYPE, or without FMTTYPE a path with an image
// extension. Inline (binary) attachments are not images the API can take.
func eventImage(c *ical.Component) string {
	for _, name := range []string{ical.PropImage, ical.PropAttach} {
		for _, p := range c.Props.Values(name) {
			if strings.EqualFold(p.Params.Get("VALUE"), "BINARY") || strings.EqualFold(p.Params.Get("ENCODING"), "BASE64") {
				continue
			}
			ft := strings.ToLower(p.Params.Get("FMTTYPE"))
			u := strings.TrimSpace(p.Value)
			if strings.HasPrefix(ft, "image/") || ft == "" && (name == ical.PropImage || hasImageExt(u)) {
				if abs, ok := absoluteURL(u, nil); ok {
					return abs.String()
				}
			}
		}
	}
	return ""
}

// eventAddress fills the structured address fields from the X- properties
// calendars use for them: Apple's X-APPLE-STRUCTURED-LOCATION (its
// X-ADDRESS parameter, street on the first line) and plain X-STREET,
// X-CITY, X-POSTAL-CODE, X-REGION and X-COUNTRY style properties.
func eventAddress(c *ical.Component, ev *Event) {
	first := func(names ...string) string {
		for _, n := range names {
			if v := plainText(html.EscapeString(propText(c.Props, n))); v != "" {
				return v
			}
		}
		return ""
	}
	ev.StreetAddress = first("X-STREET", "X-STREET-ADDRESS", "X-LOCATION-STREET")
	ev.City = first("X-CITY", "X-LOCALITY", "X-LOCATION-CITY")
	ev.PostalCode = first("X-POSTAL-CODE", "X-POSTALCODE", "X-ZIP", "X-LOCATION-POSTALCODE")
	ev.Region = first("X-REGION", "X-STATE", "X-LOCATION-REGION")
	ev.Country = first("X-COUNTRY", "X-LOCATION-COUNTRY")
	if ev.StreetAddress == "" {
		if p := c.Props.Get("X-APPLE-STRUCTURED-LOCATION"); p != nil {
			addr := strings.ReplaceAll(p.Params.Get("X-ADDRESS"), `\n`, "\n")
			line, _, _ := strings.Cut(addr, "\n")
			ev.StreetAddress = plainText(html.EscapeString(strings.TrimSpace(line)))
		}
	}
	if ev.Location == "" {
		if p := c.Props.Get("X-APPLE-STRUCTURED-LOCATION"); p != nil {
			ev.Location = plainText(html.EscapeString(p.Params.Get("X-TITLE")))
		}
	}
}

func sequence(c *ical.Component) int {
	n, _ := strconv.Atoi(strings.TrimSpace(propRaw(c.Props, ical.PropSequence)))
	return n
}

// propRaw is a property's value as written, "" when it is absent.
func propRaw(props ical.Props, name string) string {
	if p := props.Get(name); p != nil {
		return p.Value
	}
	return ""
}

// propText is a TEXT property's value with its escapes undone.
func propText(props ical.Props, name string) string {
	if p := props.Get(name); p != nil {
		return strings.TrimSpace(textOf(p))
	}
	return ""
}

func textOf(p *ical.Prop) string {
	q := *p
	q.Params = ical.Params{}
	if s, err := q.Text(); err == nil {
		return s
	}
	return p.Value
}

// propTextList is every value of every instance of a list property such
// as CATEGORIES.
func propTextList(props ical.Props, name string) []string {
	var out []string
	for _, p := range props.Values(name) {
		q := p
		q.Params = ical.Params{}
		vals, err := q.TextList()
		if err != nil {
			vals = strings.Split(p.Value, ",")
		}
		for _, v := range vals {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return slices.Compact(out)
}

// byStart orders occurrences by start, then key.
func byStart(a, b occurrence) int {
	return cmp.Or(a.start.Compare(b.start), strings.Compare(a.key, b.key))
}
