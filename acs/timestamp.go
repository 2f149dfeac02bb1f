package acs

import (
	"encoding/json"
	"fmt"
	"time"
)

// TimestampLayout is the one shape of every *_utc field: YYYY-MM-DD HH:MM:SS,
// in UTC, without zone or fraction.
const TimestampLayout = "2006-01-02 15:04:05"

// Timestamp is a UTC time with whole seconds, as the service writes it. It
// marshals to and parses from exactly [TimestampLayout]; anything else (a
// T separator, a zone, a fraction, one-digit fields, a year outside
// 0001-9999) is an error, so a malformed time never reaches the wire.
type Timestamp struct {
	time.Time
}

// NewTimestamp converts t to UTC and drops its fraction of a second.
func NewTimestamp(t time.Time) Timestamp {
	return Timestamp{t.UTC().Truncate(time.Second)}
}

// ParseTimestamp parses s, which must have exactly the shape of
// [TimestampLayout].
func ParseTimestamp(s string) (Timestamp, error) {
	if !timestampShape(s) {
		return Timestamp{}, fmt.Errorf("acs: timestamp %q: want the shape YYYY-MM-DD HH:MM:SS (UTC)", s)
	}
	t, err := time.Parse(TimestampLayout, s)
	if err != nil {
		// The shape is right, so a field is out of range (month 13, Feb 30).
		return Timestamp{}, fmt.Errorf("acs: timestamp %q: %w", s, err)
	}
	return Timestamp{t}, nil
}

// timestampShape checks the exact character classes, which time.Parse
// alone does not: it accepts one-digit hours and a trailing fraction.
func timestampShape(s string) bool {
	if len(s) != len(TimestampLayout) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c, l := s[i], TimestampLayout[i]
		if l >= '0' && l <= '9' {
			if c < '0' || c > '9' {
				return false
			}
		} else if c != l {
			return false
		}
	}
	return true
}

// String formats t in [TimestampLayout], in UTC.
func (t Timestamp) String() string {
	return t.UTC().Format(TimestampLayout)
}

// validate reports whether t can be written in the shape at all.
func (t Timestamp) validate() error {
	if t.IsZero() {
		// Almost always an unset time.Time; an absent field is a nil pointer.
		return &ValidationError{Message: "zero timestamp; leave the field nil to omit it"}
	}
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return &ValidationError{Message: fmt.Sprintf("timestamp year %d does not fit YYYY", y)}
	}
	return nil
}

// MarshalJSON writes the timestamp as a JSON string in [TimestampLayout]. It
// fails with an error matching [ErrInvalid] for a zero time or a year that
// does not fit four digits.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	return json.Marshal(t.String())
}

// UnmarshalJSON reads what a service sends back, tolerantly (the spec
// shows no response bodies): a JSON string in [TimestampLayout], or with a
// fraction of a second, a T separator or a zone (RFC 3339 and its
// variants: "Z", "+02:00", "+0200", or none, which means UTC). The time is
// converted to UTC and its fraction dropped. An empty string leaves t zero
// (an unset field); JSON null leaves t unchanged. Anything else is an error
// naming the value. What the client sends is always strict (see
// MarshalJSON and ParseTimestamp).
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("acs: timestamp %s: want a JSON string", b)
	}
	if s == "" {
		*t = Timestamp{}
		return nil
	}
	p, err := parseAnswerTimestamp(s)
	if err != nil {
		return err
	}
	*t = p
	return nil
}

// parseAnswerTimestamp reads a timestamp of an answer: the strict shape,
// else one of the layouts below, in UTC without its fraction.
func parseAnswerTimestamp(s string) (Timestamp, error) {
	p, err := ParseTimestamp(s)
	if err == nil {
		return p, nil
	}
	// time.Parse accepts a fraction after the seconds of each layout,
	// whatever its length; a layout without a zone reads as UTC.
	layouts := [...]string{
		"2006-01-02T15:04:05Z07:00",
		"2006-01-02T15:04:05Z0700",
		"2006-01-02T15:04:05",
		"2006-01-02 15:04:05Z07:00",
		"2006-01-02 15:04:05Z0700",
		"2006-01-02 15:04:05 Z07:00",
		"2006-01-02 15:04:05",
	}
	for _, l := range layouts {
		if r, perr := time.Parse(l, s); perr == nil {
			return NewTimestamp(r), nil
		}
	}
	return Timestamp{}, fmt.Errorf("acs: timestamp %q: want YYYY-MM-DD HH:MM:SS (UTC) or RFC 3339", s)
}
