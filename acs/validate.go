package acs

import (
	"errors"
	"reflect"
	"strings"
)

// Client-side checks of what the spec states, run by newRequest before any
// byte is sent. Each failure is a *ValidationError matching ErrInvalid.

func (r *SubscriberCreate) validate() error {
	for _, f := range []struct{ name, value string }{
		{"first_name", r.FirstName}, {"last_name", r.LastName}, {"email", r.Email},
	} {
		if strings.TrimSpace(f.value) == "" {
			return invalid(f.name, "required on create")
		}
	}
	return validateSubscriberRefs(r.SubscriberStatus, r.SubscriberPrivacyLevel)
}

func (r *SubscriberUpdate) validate() error {
	for _, f := range []struct {
		name  string
		value *string
	}{
		{"first_name", r.FirstName}, {"last_name", r.LastName}, {"email", r.Email},
	} {
		// Optional on update, but a present value must still be a value.
		if f.value != nil && strings.TrimSpace(*f.value) == "" {
			return invalid(f.name, "empty; leave it nil to keep the current value")
		}
	}
	return validateSubscriberRefs(r.SubscriberStatus, r.SubscriberPrivacyLevel)
}

// validateSubscriberRefs checks the two references required on create and
// update: status 2-4 (1 is reserved for Unsubscribes), privacy 1-3.
func validateSubscriberRefs(status, privacy IDRef) error {
	if status.ID < SubscriberStatusBlasts || status.ID > SubscriberStatusBlastsAndDigests {
		if status.ID == SubscriberStatusUnsubscribed {
			return invalid("subscriber_status.id", "1 is reserved for unsubscribed subscribers; use Subscribers.Unsubscribe")
		}
		return invalid("subscriber_status.id", "%d; want 2, 3 or 4", status.ID)
	}
	if privacy.ID < PrivacyPersonalize || privacy.ID > PrivacyNoPersonalization {
		return invalid("subscriber_privacy_level.id", "%d; want 1, 2 or 3", privacy.ID)
	}
	return nil
}

func (r *SegmentCreate) validate() error {
	if strings.TrimSpace(r.Description) == "" {
		return invalid("description", "required: it is the segment's name")
	}
	return nil
}

func (r *CategoryCreate) validate() error {
	if strings.TrimSpace(r.Description) == "" {
		return invalid("description", "required: it is the category's name")
	}
	return nil
}

// segmentMember is the data object of Segments.AddSubscriber: exactly one
// subscriber per request, which the method's signature already enforces.
type segmentMember struct {
	ID int64 `json:"id"`
}

func (m *segmentMember) validate() error {
	if m.ID <= 0 {
		return invalid("id", "%d is not a positive subscriber id", m.ID)
	}
	return nil
}

// validateTimestamps checks every Timestamp field of a request struct, so
// a zero or out-of-range time is reported with its field's JSON name rather
// than as an encoding failure.
func validateTimestamps(body any) error {
	rv := reflect.Indirect(reflect.ValueOf(body))
	if rv.Kind() != reflect.Struct {
		return nil
	}
	rt := rv.Type()
	timestampType := reflect.TypeFor[Timestamp]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		fv := rv.Field(i)
		if f.Type.Kind() == reflect.Pointer {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		if fv.Type() != timestampType {
			continue
		}
		ts := fv.Interface().(Timestamp)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if err := checkTimestamp(name, &ts); err != nil {
			return err
		}
	}
	return nil
}

// checkTimestamp checks t (nil: absent), naming the field name in its error.
func checkTimestamp(name string, t *Timestamp) error {
	if t == nil {
		return nil
	}
	if err := t.validate(); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			return &ValidationError{Field: name, Message: ve.Message}
		}
		return err
	}
	return nil
}
