package transform

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

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

	// Cancelled marks an item the source withdrew (an iCalendar event
	// with STATUS:CANCELLED): the publisher deletes its content instead of
	// sending it, and never posts it.
	Cancelled bool `json:"cancelled,omitempty"`

	// Hash is a hex digest over every field above except Hash itself; the
	// publisher PUTs an item again when it changes.
	Hash string `json:"hash"`

	// GUID is the item's GUID as the feed wrote it, for repost matching
	// (see AliasGUID). It is neither hashed nor kept: a GUID is identity,
	// not content.
	GUID string `json:"-"`
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

// computeHash returns the hex SHA-256 of the payload's JSON form with Hash
// left empty. The JSON form is deterministic (struct fields in order, times
// in UTC), so equal payloads hash equal across runs, and a field added to
// Payload is covered without touching this function. The body, the one
// large field, goes into the digest as raw bytes after the JSON (which ends
// in a newline, so the two cannot run together): escaping it for JSON would
// cost more than hashing it.
func (p *Payload) computeHash() string {
	h := sha256.New()
	buf, ok := appendHashJSON(make([]byte, 0, 1024), p)
	if ok {
		_, _ = h.Write(buf) // a hash.Hash never fails to write
	} else {
		c := *p
		c.Hash, c.Body = "", ""
		enc := json.NewEncoder(h)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&c); err != nil {
			// Only a date out of JSON's range gets here: a bug in what
			// made the payload.
			panic("transform: encoding a payload: " + err.Error())
		}
	}
	// In pieces through one buffer: the hash takes no string, and
	// io.WriteString would copy the whole body.
	if cap(buf) == 0 { // appendHashJSON may give back nothing when it fails
		buf = make([]byte, 1024)
	}
	buf = buf[:cap(buf)]
	for body := p.Body; body != ""; {
		n := copy(buf, body)
		_, _ = h.Write(buf[:n])
		body = body[n:]
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// SetImage sets the image (an og:image found later, typically) and
// recomputes the hash. The URL must be absolute http(s).
func (p *Payload) SetImage(imageURL string) error {
	u, ok := absoluteURL(imageURL, nil)
	if !ok || strings.HasPrefix(strings.TrimSpace(imageURL), "//") {
		return fmt.Errorf("set image %q: not an absolute http(s) URL", imageURL)
	}
	p.ImageURL = u.String()
	p.Hash = p.computeHash()
	return nil
}

// DateRules are the durations a feed's derived dates follow: expiration and
// priority end are the publish date plus these (zero: not set).
type DateRules struct {
	ExpireAfter time.Duration `json:"expire_after,omitempty"`
	PriorityFor time.Duration `json:"priority_for,omitempty"`
}

// DateRules returns the mapping's expire_after and priority_for, for
// ForSend.
func (m *Mapping) DateRules() DateRules {
	return DateRules{ExpireAfter: m.expireAfter, PriorityFor: m.priorityFor}
}

func (p *Payload) applyDateRules(r DateRules) {
	p.ExpirationDate, p.PriorityUntil = time.Time{}, time.Time{}
	if p.PublishDate.IsZero() {
		return
	}
	if r.ExpireAfter > 0 {
		p.ExpirationDate = p.PublishDate.Add(r.ExpireAfter)
	}
	if r.PriorityFor > 0 {
		p.PriorityUntil = p.PublishDate.Add(r.PriorityFor)
	}
}

// ForSend returns a copy of p with its dates as they are to be sent: a
// missing publish date becomes firstSeen (when the worker first saw the
// item), a publish date after now becomes now, and the expiration and
// priority dates follow the publish date again. Hash is kept: it describes
// the item, not the moment it is sent (see the package comment).
func (p *Payload) ForSend(firstSeen, now time.Time, r DateRules) *Payload {
	c := *p
	c.CategoryIDs = slices.Clone(p.CategoryIDs)
	c.CategoryNames = slices.Clone(p.CategoryNames)
	c.Segments = slices.Clone(p.Segments)
	if p.Event != nil {
		ev := *p.Event
		c.Event = &ev
	}
	if p.Need != nil {
		n := *p.Need
		c.Need = &n
	}
	if c.PublishDate.IsZero() {
		c.PublishDate = firstSeen.UTC()
	}
	if now = now.UTC(); c.PublishDate.After(now) {
		c.PublishDate = now
	}
	c.applyDateRules(r)
	return &c
}
