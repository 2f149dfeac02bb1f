package acs

import "encoding/json"

// Ref points at another resource: {id, self} in the spec. In requests only
// ID is needed; Self is omitted when empty.
type Ref struct {
	ID   int64  `json:"id"`
	Self string `json:"self,omitempty"`
}

// IDRef is the spec's object {id: integer}: subscriber_status,
// subscriber_privacy_level, departure_code, the blast references and a
// Need's author on create.
type IDRef struct {
	ID int64 `json:"id"`
}

// Data types: the {type} of the template endpoints, and (story, event, link,
// need) the Type of [Content] read through /v3/content.
const (
	TypeSubscriber         = "subscriber"
	TypeUnsubscribe        = "unsubscribe"
	TypeSegment            = "segment"
	TypeCategory           = "category"
	TypeContent            = "content"
	TypeStory              = "story"
	TypeEvent              = "event"
	TypeLink               = "link"
	TypeNeed               = "need"
	TypeBlast              = "blast"
	TypeContentInsights    = "content_insights"
	TypeSubscriberInsights = "subscriber_insights"
)

// Values of the subscriber_status reference list (spec 2.2).
const (
	// SubscriberStatusUnsubscribed is reserved: no request may set it.
	SubscriberStatusUnsubscribed     int64 = 1
	SubscriberStatusBlasts           int64 = 2
	SubscriberStatusDigests          int64 = 3
	SubscriberStatusBlastsAndDigests int64 = 4 // the recommended initial value
)

// Values of the subscriber_privacy_level reference list (spec 2.2).
const (
	PrivacyPersonalize            int64 = 1
	PrivacyPersonalizeNoReporting int64 = 2
	PrivacyNoPersonalization      int64 = 3
)

// Values of the blast_status reference list (spec 2.2).
const (
	BlastStatusDraft     int64 = 1
	BlastStatusSending   int64 = 2
	BlastStatusScheduled int64 = 3
	BlastStatusSent      int64 = 4
)

// DepartureCodeRetired is the one subscriber_departure_code whose meaning
// the spec gives: the Subscriber retired from the organization.
const DepartureCodeRetired int64 = 6

// rawJSON keeps the whole object a record was decoded from, for the records
// whose fields the spec only partly shows.
func rawJSON(b []byte) json.RawMessage { return append(json.RawMessage(nil), b...) }

// Subscriber is a member of the Audience (spec 2.3).
type Subscriber struct {
	ID                     int64  `json:"id"`
	FirstName              string `json:"first_name,omitempty"`
	LastName               string `json:"last_name,omitempty"`
	Email                  string `json:"email,omitempty"`
	SubscriberStatus       *IDRef `json:"subscriber_status,omitempty"`
	SubscriberPrivacyLevel *IDRef `json:"subscriber_privacy_level,omitempty"`

	// Raw is the object as received: Subscribers carry values describing
	// their position in the organization whose names the spec does not show.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes the known fields and keeps the object in Raw.
func (s *Subscriber) UnmarshalJSON(b []byte) error {
	type plain Subscriber
	if err := lenient(b, (*plain)(s)); err != nil {
		return err
	}
	s.Raw = rawJSON(b)
	return nil
}

// Unsubscribe is a removed Subscriber; it keeps the id the Subscriber had
// (spec 2.4). Its other fields are not shown by the spec: read them from Raw.
type Unsubscribe struct {
	ID  int64           `json:"id"`
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes the id and keeps the object in Raw.
func (u *Unsubscribe) UnmarshalJSON(b []byte) error {
	type plain Unsubscribe
	if err := lenient(b, (*plain)(u)); err != nil {
		return err
	}
	u.Raw = rawJSON(b)
	return nil
}

// Interest is one Category a Subscriber is most interested in. The spec
// does not show the record's fields: ID and Description are read as a
// Category's, and Raw holds the object.
type Interest struct {
	ID          int64           `json:"id"`
	Description string          `json:"description,omitempty"`
	Raw         json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes the known fields and keeps the object in Raw.
func (i *Interest) UnmarshalJSON(b []byte) error {
	type plain Interest
	if err := lenient(b, (*plain)(i)); err != nil {
		return err
	}
	i.Raw = rawJSON(b)
	return nil
}

// Insight is one engagement record of /v3/content_insights or
// /v3/subscriber_insights. The spec does not show its fields: read them
// from Raw.
type Insight struct {
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the object in Raw.
func (i *Insight) UnmarshalJSON(b []byte) error {
	// encoding/json has validated b before calling.
	i.Raw = rawJSON(b)
	return nil
}

// ReferenceItem is one entry of a reference list (spec 2.2): privacy
// levels, subscriber statuses, departure codes, blast statuses.
type ReferenceItem struct {
	ID          int64           `json:"id"`
	Description string          `json:"description,omitempty"`
	Raw         json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes the known fields and keeps the object in Raw: the
// spec names only a departure code's description.
func (r *ReferenceItem) UnmarshalJSON(b []byte) error {
	type plain ReferenceItem
	if err := lenient(b, (*plain)(r)); err != nil {
		return err
	}
	r.Raw = rawJSON(b)
	return nil
}

// Segment groups Subscribers (spec 2.5).
type Segment struct {
	ID int64 `json:"id"`
	// Description is the Segment's name.
	Description     string     `json:"description,omitempty"`
	ExternalID      *string    `json:"external_id,omitempty"`
	DateModifiedUTC *Timestamp `json:"date_modified_utc,omitempty"`
}

// Category is a topic Content is filed under (spec 2.6).
type Category struct {
	ID int64 `json:"id"`
	// Description is the Category's name.
	Description string `json:"description,omitempty"`
}

// Content is a Story, Event, Link or Need as read through /v3/content
// (spec 2.7): the union of the fields of all four types.
type Content struct {
	ID int64 `json:"id"`
	// Type is story, event, link or need; empty when the server did not say.
	Type string `json:"type,omitempty"`
	Self string `json:"self,omitempty"`

	Author                *Ref       `json:"author,omitempty"`
	Title                 *string    `json:"title,omitempty"`
	Summary               *string    `json:"summary,omitempty"`
	Body                  *string    `json:"body,omitempty"`
	MoreButtonText        *string    `json:"more_button_text,omitempty"`
	ImageURL              *string    `json:"image_url,omitempty"`
	Categories            []Ref      `json:"categories,omitempty"`
	ExternalID            *string    `json:"external_id,omitempty"`
	Priority              *Ref       `json:"priority,omitempty"`
	PriorityUntilDateUTC  *Timestamp `json:"priority_until_date_utc,omitempty"`
	PublishDateUTC        *Timestamp `json:"publish_date_utc,omitempty"`
	ExpirationDateUTC     *Timestamp `json:"expiration_date_utc,omitempty"`
	Private               *bool      `json:"private,omitempty"`
	Segments              []Ref      `json:"segments,omitempty"`
	ExclusiveToSegment    *bool      `json:"exclusive_to_segment,omitempty"`
	AvailableInPartner    *bool      `json:"available_in_partner,omitempty"`
	EnableComments        *bool      `json:"enable_comments,omitempty"`
	EnableLinkTracking    *bool      `json:"enable_link_tracking,omitempty"`
	Status                *Ref       `json:"status,omitempty"`
	Evergreen             *bool      `json:"evergreen,omitempty"`
	ExternalURL           *string    `json:"external_url,omitempty"`
	EventLocation         *string    `json:"event_location,omitempty"`
	EventStreetAddress    *string    `json:"event_street_address,omitempty"`
	EventCity             *string    `json:"event_city,omitempty"`
	EventPostalCode       *string    `json:"event_postal_code,omitempty"`
	EventRegion           *string    `json:"event_region,omitempty"`
	EventCountry          *string    `json:"event_country,omitempty"`
	EventAllDay           *bool      `json:"event_all_day,omitempty"`
	EventStartDateTimeUTC *Timestamp `json:"event_start_date_time_utc,omitempty"`
	EventEndDateTimeUTC   *Timestamp `json:"event_end_date_time_utc,omitempty"`
	EventTimeZone         *Ref       `json:"event_time_zone,omitempty"`
	EventRegistrationURL  *string    `json:"event_registration_url,omitempty"`
	NeedQuantity          *int64     `json:"need_quantity,omitempty"`
	NeedByDateUTC         *Timestamp `json:"need_by_date_utc,omitempty"`
}

// MergeField fills one merge field of a Blast's template.
type MergeField struct {
	ID    int64  `json:"id"`
	Type  IDRef  `json:"type"`
	Value string `json:"value"`
}

// Blast is an e-mail communication to a targeted group (spec 2.8).
type Blast struct {
	ID                int64        `json:"id"`
	Status            *IDRef       `json:"status,omitempty"`
	BlastTemplate     *IDRef       `json:"blast_template,omitempty"`
	BlastMergeFields  []MergeField `json:"blast_merge_fields,omitempty"`
	Name              *string      `json:"name,omitempty"`
	ReplyToEmail      *string      `json:"reply_to_email,omitempty"`
	ReplyToName       *string      `json:"reply_to_name,omitempty"`
	Subject           *string      `json:"subject,omitempty"`
	Message           *string      `json:"message,omitempty"`
	TargetSegments    []IDRef      `json:"target_segments,omitempty"`
	TargetCategories  []IDRef      `json:"target_categories,omitempty"`
	TargetConditional *IDRef       `json:"target_conditional,omitempty"`
	DateScheduledUTC  *Timestamp   `json:"date_scheduled_utc,omitempty"`
}

// Template describes a data type, as its template endpoint reports it.
// The spec does not show template documents; see [Template.UnmarshalJSON]
// for the shapes read.
type Template struct {
	Type   string          `json:"type"`
	Fields []TemplateField `json:"fields"`
}

// TemplateField is one field of a [Template]. Each flag may come as a
// boolean, a string or a list of the operations ("create", "update") or
// content types ("story") it holds for; the boolean is true when it holds
// for any, and the list, when one was given, says which.
type TemplateField struct {
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
	// Searchable fields are the ones a [Filter] may use.
	Searchable bool `json:"searchable"`
	Required   bool `json:"required"`
	// Create and Update say whether the field may be sent on a create or
	// an update; true unless the template says otherwise (a create flag,
	// read_only, update_only and the like).
	Create bool `json:"create"`
	Update bool `json:"update"`
	// SearchableFor and RequiredFor are what a flag given as a list (or a
	// name) named; empty when it was a boolean.
	SearchableFor []string `json:"searchable_for,omitempty"`
	RequiredFor   []string `json:"required_for,omitempty"`
}

// Searchable returns the names of the fields filters may use, in the
// template's order.
func (t *Template) Searchable() []string {
	var names []string
	for _, f := range t.Fields {
		if f.Searchable {
			names = append(names, f.Name)
		}
	}
	return names
}
