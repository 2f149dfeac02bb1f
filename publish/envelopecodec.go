package publish

import (
	"strconv"
	"strings"
	"time"

	"github.com/feedworker/feedworker/internal/jsonfast"
	"github.com/feedworker/feedworker/transform"
)

// The version 2 head (the envelope's JSON line) is written and read here
// without reflection: encoding/json's reflective walk over the payload's
// thirty fields cost about as much as everything else an entry's encode or
// decode does. The bytes are encoding/json's own (an Encoder without HTML
// escaping, fields in struct order), so entries read the same by any
// worker; TestEnvelopeHeadBytes and FuzzEnvelopeHead hold both directions
// to encoding/json. What the fast paths do not handle (an event's or a
// need's fields, a null, an unknown key) goes to encoding/json whole, as
// before; strings, escaped or not, are read by jsonfast.ReadString.

// appendHead appends env's head as encoding/json writes it, with the
// newline; ok is false for an envelope it leaves to encoding/json (an
// event or a need, a time encoding/json refuses).
func appendHead(b []byte, env *envelope) (_ []byte, ok bool) {
	pl := &env.Payload
	if pl.Event != nil || pl.Need != nil {
		return b, false
	}
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(env.V), 10)
	b = append(b, `,"payload":{"type":`...)
	b = jsonfast.AppendString(b, pl.Type)
	b = append(b, `,"feed_id":`...)
	b = jsonfast.AppendString(b, pl.FeedID)
	b = append(b, `,"external_id":`...)
	b = jsonfast.AppendString(b, pl.ExternalID)
	b = append(b, `,"title":`...)
	b = jsonfast.AppendString(b, pl.Title)
	b = appendStringField(b, `,"summary":`, pl.Summary)
	b = appendStringField(b, `,"body":`, pl.Body)
	b = appendStringField(b, `,"image_url":`, pl.ImageURL)
	b = appendStringField(b, `,"external_url":`, pl.ExternalURL)
	b = appendStringField(b, `,"more_button_text":`, pl.MoreButtonText)
	for _, f := range [...]struct {
		key string
		t   time.Time
	}{{`,"publish_date":`, pl.PublishDate}, {`,"expiration_date":`, pl.ExpirationDate}, {`,"priority_until":`, pl.PriorityUntil}} {
		if f.t.IsZero() {
			continue
		}
		b = append(b, f.key...)
		b = append(b, '"')
		var err error
		if b, err = f.t.AppendText(b); err != nil {
			return b, false
		}
		b = append(b, '"')
	}
	b = appendInts(b, `,"category_ids":`, pl.CategoryIDs)
	if len(pl.CategoryNames) > 0 {
		b = append(b, `,"category_names":`...)
		b = jsonfast.AppendStrings(b, pl.CategoryNames)
	}
	for _, f := range [...]struct {
		key string
		v   *int64
	}{{`,"author_id":`, pl.AuthorID}, {`,"priority_id":`, pl.PriorityID}, {`,"status_id":`, pl.StatusID}} {
		if f.v != nil {
			b = append(b, f.key...)
			b = strconv.AppendInt(b, *f.v, 10)
		}
	}
	b = appendInts(b, `,"segments":`, pl.Segments)
	for _, f := range [...]struct {
		key string
		v   *bool
	}{
		{`,"private":`, pl.Private}, {`,"exclusive_to_segment":`, pl.ExclusiveToSegment},
		{`,"available_in_partner":`, pl.AvailableInPartner}, {`,"enable_comments":`, pl.EnableComments},
		{`,"enable_link_tracking":`, pl.EnableLinkTracking}, {`,"evergreen":`, pl.Evergreen},
	} {
		if f.v != nil {
			b = append(b, f.key...)
			b = strconv.AppendBool(b, *f.v)
		}
	}
	if pl.Cancelled {
		b = append(b, `,"cancelled":true`...)
	}
	b = append(b, `,"hash":`...)
	b = jsonfast.AppendString(b, pl.Hash)
	b = append(b, '}')
	if env.RecreateDeleted {
		b = append(b, `,"recreate_deleted":true`...)
	}
	if env.CreateCategories {
		b = append(b, `,"create_categories":true`...)
	}
	if env.Dates != (transform.DateRules{}) {
		b = append(b, `,"dates":{`...)
		comma := false
		if env.Dates.ExpireAfter != 0 {
			b = append(b, `"expire_after":`...)
			b = strconv.AppendInt(b, int64(env.Dates.ExpireAfter), 10)
			comma = true
		}
		if env.Dates.PriorityFor != 0 {
			if comma {
				b = append(b, ',')
			}
			b = append(b, `"priority_for":`...)
			b = strconv.AppendInt(b, int64(env.Dates.PriorityFor), 10)
		}
		b = append(b, '}')
	}
	if m := env.MergeInto; m != nil {
		b = append(b, `,"merge_into":{"target":`...)
		b = jsonfast.AppendString(b, m.Target)
		if m.Categories {
			b = append(b, `,"categories":true`...)
		}
		b = append(b, '}')
	}
	return append(b, "}\n"...), true
}

func appendStringField(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return jsonfast.AppendString(append(b, key...), s)
}

func appendInts(b []byte, key string, v []int64) []byte {
	if len(v) == 0 {
		return b
	}
	return jsonfast.AppendInt64s(append(b, key...), v)
}

// parseHead reads a head as appendHead writes it into env (zero), and
// reports whether it could; when it could not, env is left for
// encoding/json to fill from scratch. What it reads, it reads as
// json.Unmarshal would.
func parseHead(head string, env *envelope) bool {
	r := headReader{s: head}
	if !r.object(func(key string) bool {
		switch key {
		case "v":
			n, ok := r.int()
			env.V = int(n)
			return ok && int64(env.V) == n
		case "payload":
			return r.object(func(key string) bool { return r.payloadField(key, &env.Payload) })
		case "recreate_deleted":
			return r.bool(&env.RecreateDeleted)
		case "create_categories":
			return r.bool(&env.CreateCategories)
		case "dates":
			return r.object(func(key string) bool {
				var n int64
				var ok bool
				switch key {
				case "expire_after":
					n, ok = r.int()
					env.Dates.ExpireAfter = time.Duration(n)
				case "priority_for":
					n, ok = r.int()
					env.Dates.PriorityFor = time.Duration(n)
				}
				return ok
			})
		case "merge_into":
			// A second merge_into fills the first, as json.Unmarshal does.
			if env.MergeInto == nil {
				env.MergeInto = &mergeInto{}
			}
			m := env.MergeInto
			return r.object(func(key string) bool {
				switch key {
				case "target":
					return r.ownString(&m.Target)
				case "categories":
					return r.bool(&m.Categories)
				}
				return false
			})
		}
		return false
	}) {
		return false
	}
	r.space()
	return r.i == len(r.s)
}

// headReader is parseHead's cursor. Each method reports false for what it
// leaves to encoding/json: anything but the plain forms appendHead writes.
type headReader struct {
	s string
	i int
}

func (r *headReader) payloadField(key string, pl *transform.Payload) bool {
	switch key {
	case "type":
		return r.ownString(&pl.Type)
	case "feed_id":
		return r.ownString(&pl.FeedID)
	case "external_id":
		return r.ownString(&pl.ExternalID)
	case "title":
		return r.string(&pl.Title)
	case "summary":
		return r.string(&pl.Summary)
	case "body":
		return r.string(&pl.Body)
	case "image_url":
		return r.string(&pl.ImageURL)
	case "external_url":
		return r.string(&pl.ExternalURL)
	case "more_button_text":
		return r.string(&pl.MoreButtonText)
	case "publish_date":
		return r.time(&pl.PublishDate)
	case "expiration_date":
		return r.time(&pl.ExpirationDate)
	case "priority_until":
		return r.time(&pl.PriorityUntil)
	case "category_ids":
		return r.ints(&pl.CategoryIDs)
	case "category_names":
		return r.strings(&pl.CategoryNames)
	case "author_id":
		return r.intPtr(&pl.AuthorID)
	case "priority_id":
		return r.intPtr(&pl.PriorityID)
	case "status_id":
		return r.intPtr(&pl.StatusID)
	case "segments":
		return r.ints(&pl.Segments)
	case "private":
		return r.boolPtr(&pl.Private)
	case "exclusive_to_segment":
		return r.boolPtr(&pl.ExclusiveToSegment)
	case "available_in_partner":
		return r.boolPtr(&pl.AvailableInPartner)
	case "enable_comments":
		return r.boolPtr(&pl.EnableComments)
	case "enable_link_tracking":
		return r.boolPtr(&pl.EnableLinkTracking)
	case "evergreen":
		return r.boolPtr(&pl.Evergreen)
	case "cancelled":
		return r.bool(&pl.Cancelled)
	case "hash":
		return r.ownString(&pl.Hash)
	}
	return false // event, need, or a key appendHead does not write
}

func (r *headReader) space() {
	for r.i < len(r.s) {
		switch r.s[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *headReader) byte(c byte) bool {
	r.space()
	if r.i < len(r.s) && r.s[r.i] == c {
		r.i++
		return true
	}
	return false
}

// object reads {"key":value,...}, handing each key to field, which reads
// the value.
func (r *headReader) object(field func(key string) bool) bool {
	if !r.byte('{') {
		return false
	}
	if r.byte('}') {
		return true
	}
	for {
		var key string
		if !r.string(&key) || !r.byte(':') || !field(key) {
			return false
		}
		if r.byte('}') {
			return true
		}
		if !r.byte(',') {
			return false
		}
	}
}

// string reads a string as json.Unmarshal does; one without escapes is
// a part of r.s.
func (r *headReader) string(dst *string) bool {
	r.space()
	v, n, ok := jsonfast.ReadString(r.s[r.i:])
	if ok {
		*dst = v
		r.i += n
	}
	return ok
}

// ownString is string for the small strings that can outlive the
// delivery (a metric's label values, the categories' names, map keys):
// copied, so that they do not keep the whole entry they point into.
func (r *headReader) ownString(dst *string) bool {
	ok := r.string(dst)
	*dst = strings.Clone(*dst)
	return ok
}

// time reads a time as json.Unmarshal does: the quoted string handed to
// time.Time's UnmarshalJSON as it stands.
func (r *headReader) time(dst *time.Time) bool {
	r.space()
	start := r.i
	var s string
	if !r.string(&s) {
		return false
	}
	return dst.UnmarshalJSON([]byte(r.s[start:r.i])) == nil
}

// int reads an integer literal (a JSON number without fraction or
// exponent) that fits an int64.
func (r *headReader) int() (int64, bool) {
	r.space()
	start := r.i
	if r.i < len(r.s) && r.s[r.i] == '-' {
		r.i++
	}
	digits := r.i
	for r.i < len(r.s) && '0' <= r.s[r.i] && r.s[r.i] <= '9' {
		r.i++
	}
	if r.i == digits || r.s[digits] == '0' && r.i-digits > 1 {
		return 0, false
	}
	if r.i < len(r.s) {
		switch r.s[r.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	n, err := strconv.ParseInt(r.s[start:r.i], 10, 64)
	return n, err == nil
}

func (r *headReader) intPtr(dst **int64) bool {
	n, ok := r.int()
	*dst = &n
	return ok
}

func (r *headReader) literal(word string) bool {
	r.space()
	if strings.HasPrefix(r.s[r.i:], word) {
		r.i += len(word)
		return true
	}
	return false
}

func (r *headReader) bool(dst *bool) bool {
	switch {
	case r.literal("true"):
		*dst = true
	case r.literal("false"):
		*dst = false
	default:
		return false
	}
	return true
}

func (r *headReader) boolPtr(dst **bool) bool {
	var v bool
	*dst = &v
	return r.bool(&v)
}

// ints reads an array of integers; [] is an empty slice, not nil.
func (r *headReader) ints(dst *[]int64) bool {
	if !r.byte('[') {
		return false
	}
	v := make([]int64, 0, 4)
	if !r.byte(']') {
		for {
			n, ok := r.int()
			if !ok {
				return false
			}
			v = append(v, n)
			if r.byte(']') {
				break
			}
			if !r.byte(',') {
				return false
			}
		}
	}
	*dst = v
	return true
}

func (r *headReader) strings(dst *[]string) bool {
	if !r.byte('[') {
		return false
	}
	v := make([]string, 0, 2)
	if !r.byte(']') {
		for {
			var s string
			if !r.ownString(&s) {
				return false
			}
			v = append(v, s)
			if r.byte(']') {
				break
			}
			if !r.byte(',') {
				return false
			}
		}
	}
	*dst = v
	return true
}
