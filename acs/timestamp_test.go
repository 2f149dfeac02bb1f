package acs

import (
	"encoding/json"
	"errors"
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
		var ts Timestamp
		if err := json.Unmarshal([]byte(`"`+s+`"`), &ts); err == nil {
			t.Errorf("unmarshal %q succeeded", s)
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
