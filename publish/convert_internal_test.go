package publish

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/feedworker/feedworker/transform"
)

// TestUpdatesSendEmpties: an update sends every text and list field its
// type has, empty ones as "" and [], so the service ends up as the source
// is; a create stays minimal. Title, dates, booleans and refs left unset
// are not sent by either (see convert.go).
func TestUpdatesSendEmpties(t *testing.T) {
	p := &transform.Payload{ExternalID: "e1", Title: "T", PublishDate: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	common := []string{"summary", "body", "more_button_text", "image_url", "categories", "segments"}
	tests := []struct {
		typ          string
		create, upd  any
		clearedExtra []string
	}{
		{transform.TypeStory, storyCreate(p), storyUpdate(p), nil},
		{transform.TypeLink, linkCreate(p), linkUpdate(p), []string{"external_url"}},
		{transform.TypeEvent, eventCreate(p), eventUpdate(p), []string{"external_url", "event_location",
			"event_street_address", "event_city", "event_postal_code", "event_region", "event_country", "event_registration_url"}},
		{transform.TypeNeed, needCreate(p), needUpdate(p), []string{"external_url"}},
	}
	keys := func(v any) map[string]any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tc := range tests {
		t.Run(tc.typ, func(t *testing.T) {
			c, u := keys(tc.create), keys(tc.upd)
			cleared := append(slices.Clone(common), tc.clearedExtra...)
			for _, f := range cleared {
				if _, ok := c[f]; ok {
					t.Errorf("create sends empty %s: %v", f, c[f])
				}
				switch v, ok := u[f]; {
				case !ok:
					t.Errorf("update leaves out %s; want it sent empty", f)
				case v != "" && !isEmptyList(v):
					t.Errorf("update sends %s = %#v; want \"\" or []", f, v)
				}
			}
			for _, f := range []string{"private", "evergreen", "author", "priority", "status", "expiration_date_utc", "event_all_day"} {
				if _, ok := u[f]; ok {
					t.Errorf("update sends unset %s", f)
				}
			}
			if u["title"] != "T" || u["external_id"] != "e1" {
				t.Errorf("update title %v, external_id %v; want them", u["title"], u["external_id"])
			}
		})
	}
}

func isEmptyList(v any) bool {
	l, ok := v.([]any)
	return ok && len(l) == 0
}
