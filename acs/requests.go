package acs

// Request types. Each is the data object of one endpoint's envelope and has
// exactly the fields the spec gives that endpoint, so a field a type lacks
// cannot be sent. Optional scalars are pointers and optional lists use
// omitzero: nil is not sent, while a non-nil empty list is sent as [] (to
// clear a list on update). Fields the service assigns (id on create, self)
// are not settable; on update the id comes from the method's argument.

// SubscriberCreate is the body of Subscribers.Create. Every field is
// required by the spec and checked before sending.
type SubscriberCreate struct {
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Email     string `json:"email"`
	// SubscriberStatus.ID must be 2, 3 or 4 (1 is reserved).
	SubscriberStatus IDRef `json:"subscriber_status"`
	// SubscriberPrivacyLevel.ID must be 1, 2 or 3.
	SubscriberPrivacyLevel IDRef `json:"subscriber_privacy_level"`
}

// SubscriberUpdate is the body of Subscribers.Update: the fields of create,
// of which the status and privacy level are required.
type SubscriberUpdate struct {
	// ID is set by Update from its id argument; if set, it must match.
	ID                     int64   `json:"id"`
	FirstName              *string `json:"first_name,omitempty"`
	LastName               *string `json:"last_name,omitempty"`
	Email                  *string `json:"email,omitempty"`
	SubscriberStatus       IDRef   `json:"subscriber_status"`
	SubscriberPrivacyLevel IDRef   `json:"subscriber_privacy_level"`
}

// UnsubscribeRequest is the optional body of Subscribers.Unsubscribe.
type UnsubscribeRequest struct {
	TerminationDateUTC   *Timestamp `json:"termination_date_utc,omitempty"`
	TerminationVoluntary *bool      `json:"termination_voluntary,omitempty"`
	// DepartureCode.ID is one of Reference.ListDepartureCodes.
	DepartureCode *IDRef `json:"departure_code,omitempty"`
}

// SegmentCreate is the body of Segments.Create.
type SegmentCreate struct {
	// Description is the Segment's name; required.
	Description string  `json:"description"`
	ExternalID  *string `json:"external_id,omitempty"`
}

// SegmentUpdate is the body of Segments.Update.
type SegmentUpdate struct {
	// ID is set by Update from its id argument; if set, it must match.
	ID          int64   `json:"id"`
	Description *string `json:"description,omitempty"`
	ExternalID  *string `json:"external_id,omitempty"`
}

// CategoryCreate is the body of Categories.Create.
type CategoryCreate struct {
	// Description is the Category's name; required.
	Description string `json:"description"`
}

// StoryCreate is the body of Stories.Create. A Story has no external_url.
type StoryCreate struct {
	Author               *Ref       `json:"author,omitempty"`
	Title                *string    `json:"title,omitempty"`
	Summary              *string    `json:"summary,omitempty"`
	Body                 *string    `json:"body,omitempty"`
	MoreButtonText       *string    `json:"more_button_text,omitempty"`
	ImageURL             *string    `json:"image_url,omitempty"`
	Categories           []Ref      `json:"categories,omitzero"`
	ExternalID           *string    `json:"external_id,omitempty"`
	Priority             *Ref       `json:"priority,omitempty"`
	PriorityUntilDateUTC *Timestamp `json:"priority_until_date_utc,omitempty"`
	PublishDateUTC       *Timestamp `json:"publish_date_utc,omitempty"`
	ExpirationDateUTC    *Timestamp `json:"expiration_date_utc,omitempty"`
	Private              *bool      `json:"private,omitempty"`
	Segments             []Ref      `json:"segments,omitzero"`
	ExclusiveToSegment   *bool      `json:"exclusive_to_segment,omitempty"`
	AvailableInPartner   *bool      `json:"available_in_partner,omitempty"`
	EnableComments       *bool      `json:"enable_comments,omitempty"`
	EnableLinkTracking   *bool      `json:"enable_link_tracking,omitempty"`
	Status               *Ref       `json:"status,omitempty"`
	Evergreen            *bool      `json:"evergreen,omitempty"`
}

// StoryUpdate is the body of Stories.Update: the fields of create plus id.
type StoryUpdate struct {
	// ID is set by Update from its id argument; if set, it must match.
	ID                   int64      `json:"id"`
	Author               *Ref       `json:"author,omitempty"`
	Title                *string    `json:"title,omitempty"`
	Summary              *string    `json:"summary,omitempty"`
	Body                 *string    `json:"body,omitempty"`
	MoreButtonText       *string    `json:"more_button_text,omitempty"`
	ImageURL             *string    `json:"image_url,omitempty"`
	Categories           []Ref      `json:"categories,omitzero"`
	ExternalID           *string    `json:"external_id,omitempty"`
	Priority             *Ref       `json:"priority,omitempty"`
	PriorityUntilDateUTC *Timestamp `json:"priority_until_date_utc,omitempty"`
	PublishDateUTC       *Timestamp `json:"publish_date_utc,omitempty"`
	ExpirationDateUTC    *Timestamp `json:"expiration_date_utc,omitempty"`
	Private              *bool      `json:"private,omitempty"`
	Segments             []Ref      `json:"segments,omitzero"`
	ExclusiveToSegment   *bool      `json:"exclusive_to_segment,omitempty"`
	AvailableInPartner   *bool      `json:"available_in_partner,omitempty"`
	EnableComments       *bool      `json:"enable_comments,omitempty"`
	EnableLinkTracking   *bool      `json:"enable_link_tracking,omitempty"`
	Status               *Ref       `json:"status,omitempty"`
	Evergreen            *bool      `json:"evergreen,omitempty"`
}

// EventCreate is the body of Events.Create. An Event has no
// publish_date_utc, expiration_date_utc or evergreen, and has the event_*
// fields.
type EventCreate struct {
	Author                *Ref       `json:"author,omitempty"`
	Title                 *string    `json:"title,omitempty"`
	Summary               *string    `json:"summary,omitempty"`
	Body                  *string    `json:"body,omitempty"`
	MoreButtonText        *string    `json:"more_button_text,omitempty"`
	ImageURL              *string    `json:"image_url,omitempty"`
	Categories            []Ref      `json:"categories,omitzero"`
	ExternalID            *string    `json:"external_id,omitempty"`
	Priority              *Ref       `json:"priority,omitempty"`
	PriorityUntilDateUTC  *Timestamp `json:"priority_until_date_utc,omitempty"`
	Private               *bool      `json:"private,omitempty"`
	Segments              []Ref      `json:"segments,omitzero"`
	ExclusiveToSegment    *bool      `json:"exclusive_to_segment,omitempty"`
	AvailableInPartner    *bool      `json:"available_in_partner,omitempty"`
	EnableComments        *bool      `json:"enable_comments,omitempty"`
	EnableLinkTracking    *bool      `json:"enable_link_tracking,omitempty"`
	Status                *Ref       `json:"status,omitempty"`
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
}

// EventUpdate is the body of Events.Update: the fields of create plus id.
type EventUpdate struct {
	// ID is set by Update from its id argument; if set, it must match.
	ID                    int64      `json:"id"`
	Author                *Ref       `json:"author,omitempty"`
	Title                 *string    `json:"title,omitempty"`
	Summary               *string    `json:"summary,omitempty"`
	Body                  *string    `json:"body,omitempty"`
	MoreButtonText        *string    `json:"more_button_text,omitempty"`
	ImageURL              *string    `json:"image_url,omitempty"`
	Categories            []Ref      `json:"categories,omitzero"`
	ExternalID            *string    `json:"external_id,omitempty"`
	Priority              *Ref       `json:"priority,omitempty"`
	PriorityUntilDateUTC  *Timestamp `json:"priority_until_date_utc,omitempty"`
	Private               *bool      `json:"private,omitempty"`
	Segments              []Ref      `json:"segments,omitzero"`
	ExclusiveToSegment    *bool      `json:"exclusive_to_segment,omitempty"`
	AvailableInPartner    *bool      `json:"available_in_partner,omitempty"`
	EnableComments        *bool      `json:"enable_comments,omitempty"`
	EnableLinkTracking    *bool      `json:"enable_link_tracking,omitempty"`
	Status                *Ref       `json:"status,omitempty"`
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
}

// LinkCreate is the body of Links.Create. A Link has every common field,
// external_url included.
type LinkCreate struct {
	Author               *Ref       `json:"author,omitempty"`
	Title                *string    `json:"title,omitempty"`
	Summary              *string    `json:"summary,omitempty"`
	Body                 *string    `json:"body,omitempty"`
	MoreButtonText       *string    `json:"more_button_text,omitempty"`
	ImageURL             *string    `json:"image_url,omitempty"`
	Categories           []Ref      `json:"categories,omitzero"`
	ExternalID           *string    `json:"external_id,omitempty"`
	Priority             *Ref       `json:"priority,omitempty"`
	PriorityUntilDateUTC *Timestamp `json:"priority_until_date_utc,omitempty"`
	PublishDateUTC       *Timestamp `json:"publish_date_utc,omitempty"`
	ExpirationDateUTC    *Timestamp `json:"expiration_date_utc,omitempty"`
	Private              *bool      `json:"private,omitempty"`
	Segments             []Ref      `json:"segments,omitzero"`
	ExclusiveToSegment   *bool      `json:"exclusive_to_segment,omitempty"`
	AvailableInPartner   *bool      `json:"available_in_partner,omitempty"`
	EnableComments       *bool      `json:"enable_comments,omitempty"`
	EnableLinkTracking   *bool      `json:"enable_link_tracking,omitempty"`
	Status               *Ref       `json:"status,omitempty"`
	Evergreen            *bool      `json:"evergreen,omitempty"`
	ExternalURL          *string    `json:"external_url,omitempty"`
}

// LinkUpdate is the body of Links.Update: the fields of create plus id.
type LinkUpdate struct {
	// ID is set by Update from its id argument; if set, it must match.
	ID                   int64      `json:"id"`
	Author               *Ref       `json:"author,omitempty"`
	Title                *string    `json:"title,omitempty"`
	Summary              *string    `json:"summary,omitempty"`
	Body                 *string    `json:"body,omitempty"`
	MoreButtonText       *string    `json:"more_button_text,omitempty"`
	ImageURL             *string    `json:"image_url,omitempty"`
	Categories           []Ref      `json:"categories,omitzero"`
	ExternalID           *string    `json:"external_id,omitempty"`
	Priority             *Ref       `json:"priority,omitempty"`
	PriorityUntilDateUTC *Timestamp `json:"priority_until_date_utc,omitempty"`
	PublishDateUTC       *Timestamp `json:"publish_date_utc,omitempty"`
	ExpirationDateUTC    *Timestamp `json:"expiration_date_utc,omitempty"`
	Private              *bool      `json:"private,omitempty"`
	Segments             []Ref      `json:"segments,omitzero"`
	ExclusiveToSegment   *bool      `json:"exclusive_to_segment,omitempty"`
	AvailableInPartner   *bool      `json:"available_in_partner,omitempty"`
	EnableComments       *bool      `json:"enable_comments,omitempty"`
	EnableLinkTracking   *bool      `json:"enable_link_tracking,omitempty"`
	Status               *Ref       `json:"status,omitempty"`
	Evergreen            *bool      `json:"evergreen,omitempty"`
	ExternalURL          *string    `json:"external_url,omitempty"`
}

// NeedCreate is the body of Needs.Create. On create a Need's author shows
// only its id; it has publish_date_utc and the need_* fields, and no
// expiration_date_utc, evergreen or external_url.
type NeedCreate struct {
	Author               *IDRef     `json:"author,omitempty"`
	Title                *string    `json:"title,omitempty"`
	Summary              *string    `json:"summary,omitempty"`
	Body                 *string    `json:"body,omitempty"`
	MoreButtonText       *string    `json:"more_button_text,omitempty"`
	ImageURL             *string    `json:"image_url,omitempty"`
	Categories           []Ref      `json:"categories,omitzero"`
	ExternalID           *string    `json:"external_id,omitempty"`
	Priority             *Ref       `json:"priority,omitempty"`
	PriorityUntilDateUTC *Timestamp `json:"priority_until_date_utc,omitempty"`
	PublishDateUTC       *Timestamp `json:"publish_date_utc,omitempty"`
	Private              *bool      `json:"private,omitempty"`
	Segments             []Ref      `json:"segments,omitzero"`
	ExclusiveToSegment   *bool      `json:"exclusive_to_segment,omitempty"`
	AvailableInPartner   *bool      `json:"available_in_partner,omitempty"`
	EnableComments       *bool      `json:"enable_comments,omitempty"`
	EnableLinkTracking   *bool      `json:"enable_link_tracking,omitempty"`
	Status               *Ref       `json:"status,omitempty"`
	NeedQuantity         *int64     `json:"need_quantity,omitempty"`
	NeedByDateUTC        *Timestamp `json:"need_by_date_utc,omitempty"`
}

// NeedUpdate is the body of Needs.Update. The spec gives publish_date_utc
// and the need_* fields on create only, and external_url on update only.
type NeedUpdate struct {
	// ID is set by Update from its id argument; if set, it must match.
	ID                   int64      `json:"id"`
	Author               *Ref       `json:"author,omitempty"`
	Title                *string    `json:"title,omitempty"`
	Summary              *string    `json:"summary,omitempty"`
	Body                 *string    `json:"body,omitempty"`
	MoreButtonText       *string    `json:"more_button_text,omitempty"`
	ImageURL             *string    `json:"image_url,omitempty"`
	Categories           []Ref      `json:"categories,omitzero"`
	ExternalID           *string    `json:"external_id,omitempty"`
	Priority             *Ref       `json:"priority,omitempty"`
	PriorityUntilDateUTC *Timestamp `json:"priority_until_date_utc,omitempty"`
	Private              *bool      `json:"private,omitempty"`
	Segments             []Ref      `json:"segments,omitzero"`
	ExclusiveToSegment   *bool      `json:"exclusive_to_segment,omitempty"`
	AvailableInPartner   *bool      `json:"available_in_partner,omitempty"`
	EnableComments       *bool      `json:"enable_comments,omitempty"`
	EnableLinkTracking   *bool      `json:"enable_link_tracking,omitempty"`
	Status               *Ref       `json:"status,omitempty"`
	ExternalURL          *string    `json:"external_url,omitempty"`
}

// BlastCreate is the body of Blasts.Create. The spec does not say which
// fields a create needs; Status decides what happens (draft, send, schedule).
type BlastCreate struct {
	Status            *IDRef       `json:"status,omitempty"`
	BlastTemplate     *IDRef       `json:"blast_template,omitempty"`
	BlastMergeFields  []MergeField `json:"blast_merge_fields,omitzero"`
	Name              *string      `json:"name,omitempty"`
	ReplyToEmail      *string      `json:"reply_to_email,omitempty"`
	ReplyToName       *string      `json:"reply_to_name,omitempty"`
	Subject           *string      `json:"subject,omitempty"`
	Message           *string      `json:"message,omitempty"`
	TargetSegments    []IDRef      `json:"target_segments,omitzero"`
	TargetCategories  []IDRef      `json:"target_categories,omitzero"`
	TargetConditional *IDRef       `json:"target_conditional,omitempty"`
	DateScheduledUTC  *Timestamp   `json:"date_scheduled_utc,omitempty"`
}

// BlastUpdate is the body of Blasts.Update: the fields of create plus id.
type BlastUpdate struct {
	// ID is set by Update from its id argument; if set, it must match.
	ID                int64        `json:"id"`
	Status            *IDRef       `json:"status,omitempty"`
	BlastTemplate     *IDRef       `json:"blast_template,omitempty"`
	BlastMergeFields  []MergeField `json:"blast_merge_fields,omitzero"`
	Name              *string      `json:"name,omitempty"`
	ReplyToEmail      *string      `json:"reply_to_email,omitempty"`
	ReplyToName       *string      `json:"reply_to_name,omitempty"`
	Subject           *string      `json:"subject,omitempty"`
	Message           *string      `json:"message,omitempty"`
	TargetSegments    []IDRef      `json:"target_segments,omitzero"`
	TargetCategories  []IDRef      `json:"target_categories,omitzero"`
	TargetConditional *IDRef       `json:"target_conditional,omitempty"`
	DateScheduledUTC  *Timestamp   `json:"date_scheduled_utc,omitempty"`
}
