package transform

import (
	"strconv"
	"time"

	"github.com/feedworker/feedworker/internal/jsonfast"
)

// appendHashJSON appends the JSON a json.Encoder with SetEscapeHTML(false)
// writes for p with Hash and Body empty, newline included: computeHash's
// input, without reflection (the encoder was two thirds of the hash's
// CPU). ok is false when a date is one encoding/json refuses (a year
// outside 0-9999): computeHash then leaves it to the encoder, whose error
// it reports. TestHashJSON fills every field of Payload, Event and Need by
// reflection and compares the two, so a field added later fails it until
// it is written here too.
func appendHashJSON(b []byte, p *Payload) (_ []byte, ok bool) {
	b = append(b, `{"type":`...)
	b = jsonfast.AppendString(b, p.Type)
	b = append(b, `,"feed_id":`...)
	b = jsonfast.AppendString(b, p.FeedID)
	b = append(b, `,"external_id":`...)
	b = jsonfast.AppendString(b, p.ExternalID)
	b = append(b, `,"title":`...)
	b = jsonfast.AppendString(b, p.Title)
	b = appendOptString(b, `,"summary":`, p.Summary)
	// Body is left out: computeHash hashes it raw after the JSON.
	b = appendOptString(b, `,"image_url":`, p.ImageURL)
	b = appendOptString(b, `,"external_url":`, p.ExternalURL)
	b = appendOptString(b, `,"more_button_text":`, p.MoreButtonText)
	if b, ok = appendOptTime(b, `,"publish_date":`, p.PublishDate); !ok {
		return b, false
	}
	if b, ok = appendOptTime(b, `,"expiration_date":`, p.ExpirationDate); !ok {
		return b, false
	}
	if b, ok = appendOptTime(b, `,"priority_until":`, p.PriorityUntil); !ok {
		return b, false
	}
	if len(p.CategoryIDs) > 0 {
		b = jsonfast.AppendInt64s(append(b, `,"category_ids":`...), p.CategoryIDs)
	}
	if len(p.CategoryNames) > 0 {
		b = jsonfast.AppendStrings(append(b, `,"category_names":`...), p.CategoryNames)
	}
	b = appendOptInt64(b, `,"author_id":`, p.AuthorID)
	b = appendOptInt64(b, `,"priority_id":`, p.PriorityID)
	b = appendOptInt64(b, `,"status_id":`, p.StatusID)
	if len(p.Segments) > 0 {
		b = jsonfast.AppendInt64s(append(b, `,"segments":`...), p.Segments)
	}
	b = appendOptBool(b, `,"private":`, p.Private)
	b = appendOptBool(b, `,"exclusive_to_segment":`, p.ExclusiveToSegment)
	b = appendOptBool(b, `,"available_in_partner":`, p.AvailableInPartner)
	b = appendOptBool(b, `,"enable_comments":`, p.EnableComments)
	b = appendOptBool(b, `,"enable_link_tracking":`, p.EnableLinkTracking)
	b = appendOptBool(b, `,"evergreen":`, p.Evergreen)
	if e := p.Event; e != nil {
		b = append(b, `,"event":{`...)
		n := len(b)
		if b, ok = appendOptTime(b, `,"start":`, e.Start); !ok {
			return b, false
		}
		if b, ok = appendOptTime(b, `,"end":`, e.End); !ok {
			return b, false
		}
		b = appendOptBool(b, `,"all_day":`, e.AllDay)
		b = appendOptString(b, `,"location":`, e.Location)
		b = appendOptString(b, `,"street_address":`, e.StreetAddress)
		b = appendOptString(b, `,"city":`, e.City)
		b = appendOptString(b, `,"postal_code":`, e.PostalCode)
		b = appendOptString(b, `,"region":`, e.Region)
		b = appendOptString(b, `,"country":`, e.Country)
		b = appendOptInt64(b, `,"time_zone_id":`, e.TimeZoneID)
		b = appendOptString(b, `,"registration_url":`, e.RegistrationURL)
		b = closeObject(b, n)
	}
	if nd := p.Need; nd != nil {
		b = append(b, `,"need":{`...)
		n := len(b)
		if nd.Quantity != nil {
			b = strconv.AppendInt(append(b, `,"quantity":`...), int64(*nd.Quantity), 10)
		}
		if b, ok = appendOptTime(b, `,"by_date":`, nd.ByDate); !ok {
			return b, false
		}
		b = closeObject(b, n)
	}
	if p.Cancelled {
		b = append(b, `,"cancelled":true`...)
	}
	// Hash is empty; GUID is never encoded.
	return append(b, `,"hash":""}`+"\n"...), true
}

// closeObject ends an object whose members were written from n on, each
// with a leading comma: the first comma goes.
func closeObject(b []byte, n int) []byte {
	if len(b) > n {
		b = append(b[:n], b[n+1:]...)
	}
	return append(b, '}')
}

func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return jsonfast.AppendString(append(b, key...), s)
}

func appendOptInt64(b []byte, key string, v *int64) []byte {
	if v == nil {
		return b
	}
	return strconv.AppendInt(append(b, key...), *v, 10)
}

func appendOptBool(b []byte, key string, v *bool) []byte {
	if v == nil {
		return b
	}
	return strconv.AppendBool(append(b, key...), *v)
}

// appendOptTime writes t as time.Time's MarshalJSON does (its text form,
// RFC 3339 with nanoseconds, quoted), nothing for the zero time.
func appendOptTime(b []byte, key string, t time.Time) ([]byte, bool) {
	if t.IsZero() {
		return b, true
	}
	b = append(append(b, key...), '"')
	b, err := t.AppendText(b)
	if err != nil {
		return b, false
	}
	return append(b, '"'), true
}
