package acs

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTimestampRoundTrip(t *testing.T) {
	t.Parallel()
	oslo := time.FixedZone("CET", 3600)
	ts := NewTimestamp(time.Date(2026, 3, 1, 9, 30, 15, 999, oslo))
	b, err := json.Marshal(ts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `"2026-03-01 08:30:15"`; got != want {
		t.Errorf("marshal = %s, want %s (UTC, whole seconds)", got, want)
	}
	var back Timestamp
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(ts.Time) || back.Location() != time.UTC {
		t.Errorf("unmarshal = %v, want %v in UTC", back, ts)
	}
}

func TestTimestampRejects(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"",
		"2026-03-01",
		"2026-03-01T08:30:15",
		"2026-03-01 08:30:15Z",
		"2026-03-01 08:30:15.5",
		"2026-03-01 8:30:15",
		"2026-3-01 08:30:15",
		"2026-03-01 08:30",
		"2026-13-01 08:30:15",
		"2026-02-30 08:30:15",
		"2026-03-01 24:00:00",
		" 2026-03-01 08:30:15",
		"２026-03-01 08:30:15",
	} {
		if _, err := ParseTimestamp(s); err == nil {
			t.Errorf("ParseTimestamp(%q) succeeded", s)
		} else if !strings.Contains(err.Error(), "timestamp") {
			t.Errorf("ParseTimestamp(%q) error %q does not say what failed", s, err)
		}
		// Reading answers is tolerant of "" (unset), of RFC 3339 and of
		// its variants: no zone (UTC), a space before the zone, a
		// fraction, one-digit hours.
		var ts Timestamp
		err := json.Unmarshal([]byte(`"`+s+`"`), &ts)
		tolerated := slices.Contains([]string{"", "2026-03-01T08:30:15", "2026-03-01 08:30:15Z", "2026-03-01 08:30:15.5", "2026-03-01 8:30:15"}, s)
		if (err == nil) != tolerated {
			t.Errorf("unmarshal %q: error %v, tolerated %v", s, err, tolerated)
		}
	}
	var ts Timestamp
	if err := json.Unmarshal([]byte(`1700000000`), &ts); err == nil {
		t.Error("unmarshal of a number succeeded")
	}
	if err := json.Unmarshal([]byte(`null`), &ts); err != nil || !ts.IsZero() {
		t.Errorf("unmarshal null = %v, %v; want zero, nil", ts, err)
	}
}

func TestTimestampMarshalRejects(t *testing.T) {
	t.Parallel()
	for name, ts := range map[string]Timestamp{
		"zero":       {},
		"year 10000": NewTimestamp(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)),
	} {
		_, err := json.Marshal(ts)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: marshal error %v, want ErrInvalid", name, err)
		}
	}
}

// TestTimestampReadsWhatServersSend: an answer with an empty timestamp or
// an RFC 3339 one must not make the whole response unreadable.
func TestTimestampReadsWhatServersSend(t *testing.T) {
	t.Parallel()
	var c Content
	body := `{"id":7,"publish_date_utc":"","expiration_date_utc":"2026-03-01T09:30:15+01:00","priority_until_date_utc":"2026-03-02 10:00:00"}`
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if c.ID != 7 || c.PublishDateUTC == nil || !c.PublishDateUTC.IsZero() {
		t.Errorf("empty publish_date_utc = %v, want a zero timestamp", c.PublishDateUTC)
	}
	if got := c.ExpirationDateUTC.String(); got != "2026-03-01 08:30:15" {
		t.Errorf("RFC 3339 expiration read as %s, want 2026-03-01 08:30:15 (UTC)", got)
	}
	if got := c.PriorityUntilDateUTC.String(); got != "2026-03-02 10:00:00" {
		t.Errorf("priority_until = %s", got)
	}
}
