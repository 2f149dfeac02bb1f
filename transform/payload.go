package transform

import "time"

// Content types, as the API's per-type paths spell them.
const (
	TypeStory = "story"
	TypeLink  = "link"
	TypeEvent = "event"
	TypeNeed  = "need"
)

// Payload is one feed item mapped to content, independent of the API's
// per-type request shapes: the publisher turns it into the create or update
// request of its Type, which drops the fields that type does not have.
// Zero values mean "not set" and are not sent.
type Payload struct {
	Type string `json:"type"`
	// FeedID and ExternalID identify the item for life (see ExternalID).
	FeedID     string `json:"feed_id"`
	ExternalID string `json:"external_id"`

	Title          string `json:"title"`
	Summary        string `json:"summary,omitempty"`
	Body           string `json:"body,omitempty"` // sanitized HTML
	ImageURL       string `json:"image_url,omitempty"`
	ExternalURL    string `json:"external_url,omitempty"` // canonical item link
	MoreButtonText string `json:"more_button_text,omitempty"`

	PublishDate    time.Time `json:"publish_date,omitzero"`
	ExpirationDate time.Time `json:"expiration_date,omitzero"`
	PriorityUntil  time.Time `json:"priority_until,omitzero"`

	// Categories to attach: ids given by the config and names still to be
	// resolved to ids by the publisher (through GET/POST /v3/category).
	CategoryIDs   []int64  `json:"category_ids,omitempty"`
	CategoryNames []string `json:"category_names,omitempty"`

	AuthorID           *int64  `json:"author_id,omitempty"`
	PriorityID         *int64  `json:"priority_id,omitempty"`
	StatusID           *int64  `json:"status_id,omitempty"`
	Segments           []int64 `json:"segments,omitempty"`
	Private            *bool   `json:"private,omitempty"`
	ExclusiveToSegment *bool   `json:"exclusive_to_segment,omitempty"`
	AvailableInPartner *bool   `json:"available_in_partner,omitempty"`
	EnableComments     *bool   `json:"enable_comments,omitempty"`
	EnableLinkTracking *bool   `json:"enable_link_tracking,omitempty"`
	Evergreen          *bool   `json:"evergreen,omitempty"`

	Event *Event `json:"event,omitempty"`
	Need  *Need  `json:"need,omitempty"`

	// Hash is a hex digest over every field above except Hash itself; the
	// publisher PUTs an item again when it changes.
	Hash string `json:"hash"`
}

// Event holds the Event-only fields.
type Event struct {
	Start           time.Time `json:"start,omitzero"`
	End             time.Time `json:"end,omitzero"`
	AllDay          *bool     `json:"all_day,omitempty"`
	Location        string    `json:"location,omitempty"`
	StreetAddress   string    `json:"street_address,omitempty"`
	City            string    `json:"city,omitempty"`
	PostalCode      string    `json:"postal_code,omitempty"`
	Region          string    `json:"region,omitempty"`
	Country         string    `json:"country,omitempty"`
	TimeZoneID      *int64    `json:"time_zone_id,omitempty"`
	RegistrationURL string    `json:"registration_url,omitempty"`
}

// Need holds the Need-only fields.
type Need struct {
	Quantity *int      `json:"quantity,omitempty"`
	ByDate   time.Time `json:"by_date,omitzero"`
}
