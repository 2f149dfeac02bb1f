package acs

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fill sets every field of the struct v points at to a non-zero value, so
// that marshaling shows every key the type can send.
func fill(t *testing.T, v any) {
	t.Helper()
	rv := reflect.ValueOf(v).Elem()
	ts := NewTimestamp(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	for i := range rv.NumField() {
		f := rv.Field(i)
		switch f.Interface().(type) {
		case int64:
			f.SetInt(1)
		case string:
			f.SetString("x")
		case *string:
			f.Set(reflect.ValueOf(Ptr("x")))
		case *bool:
			f.Set(reflect.ValueOf(Ptr(true)))
		case *int64:
			f.Set(reflect.ValueOf(Ptr[int64](1)))
		case *Timestamp:
			f.Set(reflect.ValueOf(&ts))
		case *Ref:
			f.Set(reflect.ValueOf(&Ref{ID: 1}))
		case *IDRef:
			f.Set(reflect.ValueOf(&IDRef{ID: 1}))
		case IDRef:
			f.Set(reflect.ValueOf(IDRef{ID: 2}))
		case []Ref:
			f.Set(reflect.ValueOf([]Ref{{ID: 1}}))
		case []IDRef:
			f.Set(reflect.ValueOf([]IDRef{{ID: 1}}))
		case []MergeField:
			f.Set(reflect.ValueOf([]MergeField{{ID: 1}}))
		default:
			t.Fatalf("%s.%s: no filler for %s", rv.Type().Name(), rv.Type().Field(i).Name, f.Type())
		}
	}
}

func keys(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestRequestFields checks each request type against the spec's tables
// (2.3-2.8): exactly the fields the endpoint has, no more.
func TestRequestFields(t *testing.T) {
	t.Parallel()
	common := "author title summary body more_button_text image_url categories external_id priority " +
		"priority_until_date_utc private segments exclusive_to_segment available_in_partner enable_comments " +
		"enable_link_tracking status"
	event := "event_location event_street_address event_city event_postal_code event_region event_country " +
		"event_all_day event_start_date_time_utc event_end_date_time_utc event_time_zone event_registration_url"
	blast := "status blast_template blast_merge_fields name reply_to_email reply_to_name subject message " +
		"target_segments target_categories target_conditional date_scheduled_utc"
	tests := []struct {
		v    any
		want string
	}{
		{&SubscriberCreate{}, "first_name last_name email subscriber_status subscriber_privacy_level"},
		{&SubscriberUpdate{}, "id first_name last_name email subscriber_status subscriber_privacy_level"},
		{&UnsubscribeRequest{}, "termination_date_utc termination_voluntary departure_code"},
		{&SegmentCreate{}, "description external_id"},
		{&SegmentUpdate{}, "id description external_id"},
		{&CategoryCreate{}, "description"},
		{&StoryCreate{}, common + " publish_date_utc expiration_date_utc evergreen"},
		{&StoryUpdate{}, "id " + common + " publish_date_utc expiration_date_utc evergreen"},
		{&EventCreate{}, common + " external_url " + event},
		{&EventUpdate{}, "id " + common + " external_url " + event},
		{&LinkCreate{}, common + " publish_date_utc expiration_date_utc evergreen external_url"},
		{&LinkUpdate{}, "id " + common + " publish_date_utc expiration_date_utc evergreen external_url"},
		{&NeedCreate{}, common + " publish_date_utc need_quantity need_by_date_utc"},
		{&NeedUpdate{}, "id " + common + " external_url"},
		{&BlastCreate{}, blast},
		{&BlastUpdate{}, "id " + blast},
	}
	for _, tt := range tests {
		name := reflect.TypeOf(tt.v).Elem().Name()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fill(t, tt.v)
			want := strings.Fields(tt.want)
			slices.Sort(want)
			if diff := cmp.Diff(want, keys(t, tt.v)); diff != "" {
				t.Errorf("%s sends (-spec +type):\n%s", name, diff)
			}
		})
	}
}

// TestRequestOmitsUnset: an unset optional field is not sent, and a
// non-nil empty list is sent as [] so it can clear a list.
func TestRequestOmitsUnset(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(&StoryUpdate{ID: 3, Segments: []Ref{}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"id":3,"segments":[]}`; got != want {
		t.Errorf("marshal = %s, want %s", got, want)
	}
}

// TestNeedCreateAuthorIDOnly: a Need's author shows only its id on create.
func TestNeedCreateAuthorIDOnly(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(&NeedCreate{Author: &IDRef{ID: 8}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"author":{"id":8}}`; got != want {
		t.Errorf("marshal = %s, want %s", got, want)
	}
}
