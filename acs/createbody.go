package acs

import (
	"strconv"

	"github.com/feedworker/feedworker/internal/jsonfast"
)

// bodyAppender is a request body that writes its own JSON: the bytes
// encode (encoding/json without HTML escaping) writes for it, without
// reflection. Story and Link creates are a worker's one request per new
// item, and encoding them by reflection was most of a create's cost to the
// client. TestCreateBodyIsEncodingJSON holds each to encoding/json, every
// field set by reflection, so a field added to the type fails it until it
// is written here too.
type bodyAppender interface {
	appendJSON(dst []byte) []byte
	// checkTimestamps is validateTimestamps without reflection, which
	// cost a create as much as writing its body;
	// TestCheckTimestampsIsValidateTimestamps holds the two together.
	checkTimestamps() error
}

// appendEnvelope appends the envelope newRequest wraps a body in.
func appendEnvelope(dst []byte, body bodyAppender) []byte {
	dst = append(dst, `{"template":{"version":`...)
	dst = jsonfast.AppendString(dst, APIVersion)
	dst = append(dst, `,"data":[`...)
	dst = body.appendJSON(dst)
	return append(dst, "]}}"...)
}

// createFields are the fields Story and Link creates share, in their
// order; StoryCreate is exactly these.
type createFields StoryCreate

func (r *StoryCreate) appendJSON(dst []byte) []byte {
	dst, _ = (*createFields)(r).appendFields(append(dst, '{'), true)
	return append(dst, '}')
}

func (r *StoryCreate) checkTimestamps() error { return (*createFields)(r).checkTimestamps() }

func (r *LinkCreate) checkTimestamps() error {
	return checkTimestamps(r.PriorityUntilDateUTC, r.PublishDateUTC, r.ExpirationDateUTC)
}

func (f *createFields) checkTimestamps() error {
	return checkTimestamps(f.PriorityUntilDateUTC, f.PublishDateUTC, f.ExpirationDateUTC)
}

// checkTimestamps checks a create's timestamps in their fields' order, as
// validateTimestamps does.
func checkTimestamps(priorityUntil, publish, expiration *Timestamp) error {
	if err := checkTimestamp("priority_until_date_utc", priorityUntil); err != nil {
		return err
	}
	if err := checkTimestamp("publish_date_utc", publish); err != nil {
		return err
	}
	return checkTimestamp("expiration_date_utc", expiration)
}

func (r *LinkCreate) appendJSON(dst []byte) []byte {
	f := createFields{
		Author: r.Author, Title: r.Title, Summary: r.Summary, Body: r.Body, MoreButtonText: r.MoreButtonText,
		ImageURL: r.ImageURL, Categories: r.Categories, ExternalID: r.ExternalID, Priority: r.Priority,
		PriorityUntilDateUTC: r.PriorityUntilDateUTC, PublishDateUTC: r.PublishDateUTC,
		ExpirationDateUTC: r.ExpirationDateUTC, Private: r.Private, Segments: r.Segments,
		ExclusiveToSegment: r.ExclusiveToSegment, AvailableInPartner: r.AvailableInPartner,
		EnableComments: r.EnableComments, EnableLinkTracking: r.EnableLinkTracking, Status: r.Status,
		Evergreen: r.Evergreen,
	}
	dst, first := f.appendFields(append(dst, '{'), true)
	dst, _ = appendStringField(dst, first, "external_url", r.ExternalURL)
	return append(dst, '}')
}

// appendFields writes f's fields after an opening brace; first says no
// field is written yet, and the answer whether that is still so.
func (f *createFields) appendFields(dst []byte, first bool) ([]byte, bool) {
	dst, first = appendRefField(dst, first, "author", f.Author)
	dst, first = appendStringField(dst, first, "title", f.Title)
	dst, first = appendStringField(dst, first, "summary", f.Summary)
	dst, first = appendStringField(dst, first, "body", f.Body)
	dst, first = appendStringField(dst, first, "more_button_text", f.MoreButtonText)
	dst, first = appendStringField(dst, first, "image_url", f.ImageURL)
	dst, first = appendRefsField(dst, first, "categories", f.Categories)
	dst, first = appendStringField(dst, first, "external_id", f.ExternalID)
	dst, first = appendRefField(dst, first, "priority", f.Priority)
	dst, first = appendTimeField(dst, first, "priority_until_date_utc", f.PriorityUntilDateUTC)
	dst, first = appendTimeField(dst, first, "publish_date_utc", f.PublishDateUTC)
	dst, first = appendTimeField(dst, first, "expiration_date_utc", f.ExpirationDateUTC)
	dst, first = appendBoolField(dst, first, "private", f.Private)
	dst, first = appendRefsField(dst, first, "segments", f.Segments)
	dst, first = appendBoolField(dst, first, "exclusive_to_segment", f.ExclusiveToSegment)
	dst, first = appendBoolField(dst, first, "available_in_partner", f.AvailableInPartner)
	dst, first = appendBoolField(dst, first, "enable_comments", f.EnableComments)
	dst, first = appendBoolField(dst, first, "enable_link_tracking", f.EnableLinkTracking)
	dst, first = appendRefField(dst, first, "status", f.Status)
	return appendBoolField(dst, first, "evergreen", f.Evergreen)
}

// appendName writes a field's name (plain ASCII, no escaping needed) and
// its colon, after a comma unless it is the first.
func appendName(dst []byte, first bool, name string) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, name...)
	return append(dst, '"', ':')
}

func appendStringField(dst []byte, first bool, name string, v *string) ([]byte, bool) {
	if v == nil {
		return dst, first
	}
	return jsonfast.AppendString(appendName(dst, first, name), *v), false
}

func appendBoolField(dst []byte, first bool, name string, v *bool) ([]byte, bool) {
	if v == nil {
		return dst, first
	}
	return strconv.AppendBool(appendName(dst, first, name), *v), false
}

// appendTimeField writes a timestamp as Timestamp.MarshalJSON does; the
// caller has validated it (checkTimestamps or validateTimestamps), as
// MarshalJSON would.
func appendTimeField(dst []byte, first bool, name string, v *Timestamp) ([]byte, bool) {
	if v == nil {
		return dst, first
	}
	dst = append(appendName(dst, first, name), '"')
	dst = v.UTC().AppendFormat(dst, TimestampLayout)
	return append(dst, '"'), false
}

func appendRefField(dst []byte, first bool, name string, v *Ref) ([]byte, bool) {
	if v == nil {
		return dst, first
	}
	return appendRef(appendName(dst, first, name), v), false
}

// appendRefsField writes a slice of refs as omitzero does: left out when
// nil, [] when empty.
func appendRefsField(dst []byte, first bool, name string, v []Ref) ([]byte, bool) {
	if v == nil {
		return dst, first
	}
	dst = append(appendName(dst, first, name), '[')
	for i := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendRef(dst, &v[i])
	}
	return append(dst, ']'), false
}

func appendRef(dst []byte, r *Ref) []byte {
	dst = strconv.AppendInt(append(dst, `{"id":`...), r.ID, 10)
	if r.Self != "" {
		dst = jsonfast.AppendString(append(dst, `,"self":`...), r.Self)
	}
	return append(dst, '}')
}
