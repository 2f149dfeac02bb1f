package sandbox

import (
	"fmt"
	"net/mail"
	"strings"
)

// kind is the JSON shape of a field. Its String is the type the template
// endpoint reports.
type kind int

const (
	kindString kind = iota + 1
	kindInteger
	kindBoolean
	kindTimestamp // a string shaped YYYY-MM-DD HH:MM:SS
	// kindRef is the spec's ref: {id, self} when read; {id} (self allowed
	// and ignored) when written.
	kindRef
	kindRefs
	// kindIDObject is the spec's object {id: integer}, read and written as is.
	kindIDObject
	kindIDObjects
	// kindMergeFields is a Blast's array of {id, type: {id}, value}.
	kindMergeFields
)

func (k kind) String() string {
	switch k {
	case kindString:
		return "string"
	case kindInteger:
		return "integer"
	case kindBoolean:
		return "boolean"
	case kindTimestamp:
		return "timestamp"
	case kindRef:
		return "ref"
	case kindRefs:
		return "array of ref"
	case kindIDObject:
		return "object"
	case kindIDObjects:
		return "array of object"
	case kindMergeFields:
		return "array of merge field"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// access says in which requests a field may appear.
type access int

const (
	accessRead   access = iota // shown in answers, refused in requests
	accessWrite                // create and update
	accessCreate               // create only; kept as is by updates
	accessUpdate               // update only
)

// field is one row of a data type's table: how it is validated on the way
// in, rendered on the way out, described by the template endpoint and
// filtered in lists.
type field struct {
	name             string
	kind             kind
	access           access
	required         bool // on create; such a field can never be cleared
	requiredOnUpdate bool
	searchable       bool
	// target is the collection an id points into, for self links and, with
	// mustExist, for the check that the referenced resource exists.
	target    string
	mustExist bool
	// check is a value rule beyond the type; it returns what is wrong or "".
	check func(v any) string
}

func newField(name string, k kind) field {
	return field{name: name, kind: k, access: accessWrite}
}

func (f field) req() field             { f.required = true; return f }
func (f field) reqOnUpdate() field     { f.requiredOnUpdate = true; return f }
func (f field) search() field          { f.searchable = true; return f }
func (f field) readOnly() field        { f.access = accessRead; return f }
func (f field) onCreate() field        { f.access = accessCreate; return f }
func (f field) to(target string) field { f.target = target; return f }
func (f field) rule(c func(any) string) field {
	f.check = c
	return f
}
func (f field) existing(target string) field {
	f.target, f.mustExist = target, true
	return f
}

// schema is a data type: its fields in the order the template lists them.
type schema struct {
	name   string
	fields []field
	index  map[string]int
	// elsewhere holds the fields other content types have, so that a
	// refusal can say "event has no field publish_date_utc" (spec 2.7)
	// rather than call a spec field unknown.
	elsewhere map[string]bool
}

func newSchema(name string, fields ...field) *schema {
	sc := &schema{name: name, fields: fields, index: make(map[string]int, len(fields))}
	for i, f := range fields {
		if _, dup := sc.index[f.name]; dup {
			panic("sandbox: schema " + name + " lists " + f.name + " twice") // a programming error in the tables below
		}
		sc.index[f.name] = i
	}
	return sc
}

func (sc *schema) field(name string) *field {
	i, ok := sc.index[name]
	if !ok {
		return nil
	}
	return &sc.fields[i]
}

// Collections, which are also the first path segment of their resources and
// the targets of refs.
const (
	collContent     = "content"
	collSubscriber  = "subscriber"
	collUnsubscribe = "unsubscribe"
	collSegment     = "segment"
	collCategory    = "category"
	collBlast       = "blast"
)

// contentTypes returns the four content types, in the spec's order.
func contentTypes() []string { return []string{"story", "event", "link", "need"} }

// avail is one cell of the spec 2.7 table: does a content type have the
// field, and in which requests.
type avail int

const (
	avNo avail = iota
	avYes
	avCreate
	avUpdate
)

type contentRow struct {
	f                        field
	story, event, link, need avail
}

func (r contentRow) in(typ string) avail {
	switch typ {
	case "story":
		return r.story
	case "event":
		return r.event
	case "link":
		return r.link
	case "need":
		return r.need
	}
	return avNo
}

// contentRows transcribes the tables of spec 2.7, including the Event-only
// and Need-only fields, so that a reviewer can hold it against the spec.
func contentRows() []contentRow {
	const y, n, c, u = avYes, avNo, avCreate, avUpdate
	ts := func(name string) field { return newField(name, kindTimestamp) }
	s := func(name string) field { return newField(name, kindString) }
	b := func(name string) field { return newField(name, kindBoolean) }
	return []contentRow{
		{newField("author", kindRef).to("author"), y, y, y, y},
		{s("title").req().search().rule(nonEmpty), y, y, y, y},
		{s("summary"), y, y, y, y},
		{s("body"), y, y, y, y},
		{s("more_button_text"), y, y, y, y},
		{s("image_url"), y, y, y, y},
		{newField("categories", kindRefs).existing(collCategory), y, y, y, y},
		{s("external_id").search(), y, y, y, y},
		{newField("priority", kindRef).to("priority"), y, y, y, y},
		{ts("priority_until_date_utc"), y, y, y, y},
		{ts("publish_date_utc").search(), y, n, y, c},
		{ts("expiration_date_utc").search(), y, n, y, n},
		{b("private"), y, y, y, y},
		{newField("segments", kindRefs).existing(collSegment), y, y, y, y},
		{b("exclusive_to_segment"), y, y, y, y},
		{b("available_in_partner"), y, y, y, y},
		{b("enable_comments"), y, y, y, y},
		{b("enable_link_tracking"), y, y, y, y},
		{newField("status", kindRef).to("content_status"), y, y, y, y},
		{b("evergreen"), y, n, y, n},
		{s("external_url").search(), n, y, y, u},

		{s("event_location"), n, y, n, n},
		{s("event_street_address"), n, y, n, n},
		{s("event_city"), n, y, n, n},
		{s("event_postal_code"), n, y, n, n},
		{s("event_region"), n, y, n, n},
		{s("event_country"), n, y, n, n},
		{b("event_all_day"), n, y, n, n},
		{ts("event_start_date_time_utc"), n, y, n, n},
		{ts("event_end_date_time_utc"), n, y, n, n},
		{newField("event_time_zone", kindRef).to("time_zone"), n, y, n, n},
		{s("event_registration_url"), n, y, n, n},

		{newField("need_quantity", kindInteger).rule(notNegative), n, n, n, c},
		{ts("need_by_date_utc"), n, n, n, c},
	}
}

func idField() field { return newField("id", kindInteger).readOnly().search() }

func modifiedField() field { return newField("date_modified_utc", kindTimestamp).readOnly().search() }

// contentHead is what every content answer carries besides the type's fields.
func contentHead() []field {
	return []field{
		idField(),
		newField("type", kindString).readOnly().search(),
		newField("self", kindString).readOnly().to(collContent),
	}
}

// newContentSchema is one type's schema: the fields the spec 2.7 table gives
// it, with create-only and update-only cells as access.
func newContentSchema(typ string, rows []contentRow) *schema {
	fields := contentHead()
	elsewhere := map[string]bool{}
	for _, r := range rows {
		f := r.f
		switch r.in(typ) {
		case avNo:
			elsewhere[f.name] = true
			continue
		case avCreate:
			f.access = accessCreate
		case avUpdate:
			f.access = accessUpdate
		}
		fields = append(fields, f)
	}
	fields = append(fields, modifiedField())
	sc := newSchema(typ, fields...)
	sc.elsewhere = elsewhere
	return sc
}

// newContentUnion is the schema of /v3/content: every field of any type. It
// renders and filters stored content of all four types; the per-type
// schemas validate writes.
func newContentUnion(rows []contentRow) *schema {
	fields := contentHead()
	for _, r := range rows {
		f := r.f
		// A field any type may write is writable here; a Need-only cell
		// keeps its create-only or update-only access.
		f.access = accessRead
		for _, typ := range contentTypes() {
			switch a := r.in(typ); {
			case a == avYes:
				f.access = accessWrite
			case a == avCreate && f.access == accessRead:
				f.access = accessCreate
			case a == avUpdate && f.access == accessRead:
				f.access = accessUpdate
			}
		}
		fields = append(fields, f)
	}
	return newSchema(collContent, append(fields, modifiedField())...)
}

// Schema names that are not template types.
const (
	schemaInterest  = "subscriber_interest"
	schemaReference = "reference"
)

// templateTypes returns the {type} values of GET /v3/{type}/template, as the
// wire conventions in docs/ARCHITECTURE.md list them.
func templateTypes() []string {
	return []string{
		collSubscriber, collUnsubscribe, collSegment, collCategory, collContent,
		"story", "event", "link", "need", collBlast, "content_insights", "subscriber_insights",
	}
}

// newSchemas builds every data type's schema. replyToDomain is the domain
// of the verified reply-to address that a Blast's reply_to_email must share.
func newSchemas(replyToDomain string) map[string]*schema {
	rows := contentRows()
	m := map[string]*schema{collContent: newContentUnion(rows)}
	for _, typ := range contentTypes() {
		m[typ] = newContentSchema(typ, rows)
	}
	m[collSubscriber] = newSchema(collSubscriber,
		idField(),
		newField("first_name", kindString).req().search().rule(nonEmpty),
		newField("last_name", kindString).req().search().rule(nonEmpty),
		newField("email", kindString).req().search().rule(emailAddress),
		newField("subscriber_status", kindIDObject).req().reqOnUpdate().rule(subscriberStatus),
		newField("subscriber_privacy_level", kindIDObject).req().reqOnUpdate().rule(idBetween(1, 3)),
		// Segment membership changes only through /v3/segment/{id}/subscriber.
		newField("segments", kindRefs).readOnly().to(collSegment),
		modifiedField(),
	)
	m[collUnsubscribe] = newSchema(collUnsubscribe,
		idField(),
		newField("first_name", kindString).readOnly().search(),
		newField("last_name", kindString).readOnly().search(),
		newField("email", kindString).readOnly().search(),
		newField("subscriber_status", kindIDObject).readOnly(),
		newField("subscriber_privacy_level", kindIDObject).readOnly(),
		newField("termination_date_utc", kindTimestamp).onCreate().search(),
		newField("termination_voluntary", kindBoolean).onCreate().search(),
		newField("departure_code", kindIDObject).onCreate().rule(idBetween(1, int64(len(departureCodes())))),
		modifiedField(),
	)
	m[collSegment] = newSchema(collSegment,
		idField(),
		newField("description", kindString).req().search().rule(nonEmpty),
		newField("external_id", kindString).search(),
		modifiedField(),
	)
	m[collCategory] = newSchema(collCategory,
		idField(),
		newField("description", kindString).req().search().rule(nonEmpty),
		modifiedField(),
	)
	m[collBlast] = newSchema(collBlast,
		idField(),
		newField("status", kindIDObject).rule(idBetween(1, 4)),
		newField("blast_template", kindIDObject),
		newField("blast_merge_fields", kindMergeFields),
		newField("name", kindString).search(),
		newField("reply_to_email", kindString).rule(replyTo(replyToDomain)),
		newField("reply_to_name", kindString),
		newField("subject", kindString),
		newField("message", kindString),
		newField("target_segments", kindIDObjects).existing(collSegment),
		newField("target_categories", kindIDObjects).existing(collCategory),
		newField("target_conditional", kindIDObject),
		newField("date_scheduled_utc", kindTimestamp).search(),
		modifiedField(),
	)
	counter := func(name string) field { return newField(name, kindInteger).readOnly() }
	m["content_insights"] = newSchema("content_insights",
		counter("content_id").search(),
		newField("type", kindString).readOnly().search(),
		counter("views"), counter("clicks"), counter("likes"), counter("comments"), counter("shares"),
	)
	m["subscriber_insights"] = newSchema("subscriber_insights",
		counter("subscriber_id").search(),
		newField("email", kindString).readOnly().search(),
		counter("digests_received"), counter("digests_opened"),
		counter("blasts_received"), counter("blasts_opened"),
		counter("content_views"), counter("content_clicks"),
	)
	m[schemaInterest] = newSchema(schemaInterest,
		idField(),
		newField("description", kindString).readOnly().search(),
		counter("score"),
	)
	// Reference lists have no template endpoint, so nothing is searchable.
	m[schemaReference] = newSchema(schemaReference,
		newField("id", kindInteger).readOnly(),
		newField("description", kindString).readOnly(),
	)
	return m
}

func nonEmpty(v any) string {
	if strings.TrimSpace(v.(string)) == "" {
		return "must not be empty"
	}
	return ""
}

func notNegative(v any) string {
	if v.(int64) < 0 {
		return "must not be negative"
	}
	return ""
}

func idBetween(lo, hi int64) func(any) string {
	return func(v any) string {
		if id := v.(int64); id < lo || id > hi {
			return fmt.Sprintf("id must be from %d to %d, got %d", lo, hi, id)
		}
		return ""
	}
}

func subscriberStatus(v any) string {
	switch v.(int64) {
	case 2, 3, 4:
		return ""
	case 1:
		return "id 1 is reserved for unsubscribed subscribers; use 2, 3 or 4"
	}
	return fmt.Sprintf("id must be 2, 3 or 4, got %d", v.(int64))
}

// emailAddress accepts a bare address, which net/mail parses back to itself;
// a display name or angle brackets are refused.
func emailAddress(v any) string {
	s := v.(string)
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return fmt.Sprintf("must be an e-mail address such as ann@example.com, got %q", s)
	}
	return ""
}

// replyTo enforces spec 2.8: the domain must be the verified reply-to domain.
func replyTo(domain string) func(any) string {
	return func(v any) string {
		if msg := emailAddress(v); msg != "" {
			return msg
		}
		s := v.(string)
		if got := s[strings.LastIndexByte(s, '@')+1:]; !strings.EqualFold(got, domain) {
			return fmt.Sprintf("domain %q must equal the verified reply-to domain %q", got, domain)
		}
		return ""
	}
}
