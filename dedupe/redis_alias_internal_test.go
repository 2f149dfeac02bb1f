package dedupe

import (
	"reflect"
	"testing"
	"time"
)

// TestParseReserved checks the short way a reservation's answer is read
// against parseAliasValue, for answers that take it and those that do not.
func TestParseReserved(t *testing.T) {
	as := []Alias{
		{AliasFP: AliasFP{FP: "u:1"}, Target: Key{FeedID: "f", ExternalID: "e"}, Type: "story", Extra: "a title", TTL: time.Hour},
		{AliasFP: AliasFP{FP: "u:2"}, Target: Key{FeedID: "f", ExternalID: "e|x"}, Type: "story"},
		{AliasFP: AliasFP{FP: "u:3"}, Target: Key{FeedID: "f", ExternalID: "e/x"}, Type: "link", Since: time.UnixMilli(5)},
	}
	for _, a := range as {
		val := aliasValue(a)
		for _, s := range []string{val + "|1700000000123", val + "|", val + "|x", val, val + "|1|2", "g/h|story|other|42", "g/h|story|other", "bad", val + "0|1"} {
			got, gerr := parseReserved(a, val, s)
			want, werr := parseAliasValue(a.AliasFP, s)
			if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
				t.Errorf("parseReserved(%q, %q) = %+v, %v; want %+v, %v", val, s, got, gerr, want, werr)
			}
		}
	}
}

// TestAppendOwnAliases checks the commit's alias arguments against what
// it sent before they were cut out of one string: fingerprint, value and
// TTL in ms for each alias of the feed, in order.
func TestAppendOwnAliases(t *testing.T) {
	r := &Redis{retention: 48 * time.Hour}
	k := Key{FeedID: "f", ExternalID: "e1"}
	as := []Alias{
		{AliasFP: AliasFP{FeedID: "f", FP: "u:1"}, Target: k, Type: "story", Extra: "title"},
		{AliasFP: AliasFP{FP: "u:1"}, Target: k, Type: "story", Extra: "title"},
		{AliasFP: AliasFP{FeedID: "f", FP: "b:1"}, Target: k, Type: "story", Extra: "ff00 title", TTL: time.Hour},
		{AliasFP: AliasFP{FeedID: "f", FP: "b:2"}, Target: k, Type: "story", Extra: "ff00 title", TTL: time.Hour},
		{AliasFP: AliasFP{FeedID: "f", FP: "i:x"}, Target: Key{FeedID: "g", ExternalID: "other/one"}, Type: "link"},
		{AliasFP: AliasFP{FeedID: "f", FP: "u:2"}, Target: k, Type: "story", TTL: time.Microsecond},
	}
	var want []any
	for _, a := range as {
		if a.FeedID == "f" {
			want = append(want, a.FP, []byte(aliasValue(a)), r.aliasTTL(a).Milliseconds())
		}
	}
	if got := r.appendOwnAliases([]any{"x"}, as, "f"); !reflect.DeepEqual(got, append([]any{"x"}, want...)) {
		t.Errorf("appendOwnAliases = %v, want %v", got, want)
	}
}
