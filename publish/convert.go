package publish

import (
	"fmt"
	"slices"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/transform"
)

// The builders below turn a resolved payload (category names already ids,
// publish date filled) into each type's request. Each sets exactly the
// fields its request type has; the compiler keeps a type from sending a
// field it lacks.
//
// A create stays minimal: zero values are "not set" and stay nil.
//
// An update must leave the service as the source is now, so a field the
// source dropped (an image, a summary, its categories) is emptied there:
// every text field the type has is sent, "" when empty, and every list,
// [] when empty (acs sends a non-nil empty slice as []). Three kinds of
// field are still left out when unset, and so keep their value on the
// service:
//   - the title, which the service requires: "" would be refused and the
//     item dead-lettered, where keeping the last title is harmless;
//   - timestamps (publish, expiration, priority, event and need dates):
//     acs.Timestamp has no empty form, and the request types cannot send
//     null;
//   - booleans and refs (private, evergreen, author, priority, status,
//     time zone...): the spec gives them no null and no default, and a
//     false or an id of our own choosing would change how the service
//     treats the item (who sees it, whether it is featured) on a guess.
//     A feed whose mapping stops setting one leaves it as it was; to
//     change it, the mapping sets the new value.

func str(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// text is a string to send on an update, "" included.
func text(s string) *string { return &s }

func when(t time.Time) *acs.Timestamp {
	if t.IsZero() {
		return nil
	}
	v := acs.NewTimestamp(t)
	return &v
}

func ref(id *int64) *acs.Ref {
	if id == nil {
		return nil
	}
	return &acs.Ref{ID: *id}
}

func refs(ids []int64) []acs.Ref {
	if len(ids) == 0 {
		return nil
	}
	out := make([]acs.Ref, 0, len(ids))
	for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
		out = append(out, acs.Ref{ID: id})
	}
	return out
}

// refList is a list to send on an update: [] when empty, never nil.
func refList(ids []int64) []acs.Ref {
	if out := refs(ids); out != nil {
		return out
	}
	return []acs.Ref{}
}

// updateTexts are the fields every content update sends even when empty.
type updateTexts struct {
	summary, body, moreButtonText, imageURL *string
	categories, segments                    []acs.Ref
}

func textsOf(p *transform.Payload) updateTexts {
	return updateTexts{
		summary: text(p.Summary), body: text(p.Body), moreButtonText: text(p.MoreButtonText), imageURL: text(p.ImageURL),
		categories: refList(p.CategoryIDs), segments: refList(p.Segments),
	}
}

func storyCreate(p *transform.Payload) *acs.StoryCreate {
	return &acs.StoryCreate{
		Author: ref(p.AuthorID), Title: str(p.Title), Summary: str(p.Summary), Body: str(p.Body),
		MoreButtonText: str(p.MoreButtonText), ImageURL: str(p.ImageURL), Categories: refs(p.CategoryIDs),
		ExternalID: str(p.ExternalID), Priority: ref(p.PriorityID), PriorityUntilDateUTC: when(p.PriorityUntil),
		PublishDateUTC: when(p.PublishDate), ExpirationDateUTC: when(p.ExpirationDate), Private: p.Private,
		Segments: refs(p.Segments), ExclusiveToSegment: p.ExclusiveToSegment, AvailableInPartner: p.AvailableInPartner,
		EnableComments: p.EnableComments, EnableLinkTracking: p.EnableLinkTracking, Status: ref(p.StatusID),
		Evergreen: p.Evergreen,
	}
}

func storyUpdate(p *transform.Payload) *acs.StoryUpdate {
	c, u := storyCreate(p), textsOf(p)
	return &acs.StoryUpdate{
		Author: c.Author, Title: c.Title, Summary: u.summary, Body: u.body, MoreButtonText: u.moreButtonText,
		ImageURL: u.imageURL, Categories: u.categories, ExternalID: c.ExternalID, Priority: c.Priority,
		PriorityUntilDateUTC: c.PriorityUntilDateUTC, PublishDateUTC: c.PublishDateUTC,
		ExpirationDateUTC: c.ExpirationDateUTC, Private: c.Private, Segments: u.segments,
		ExclusiveToSegment: c.ExclusiveToSegment, AvailableInPartner: c.AvailableInPartner,
		EnableComments: c.EnableComments, EnableLinkTracking: c.EnableLinkTracking, Status: c.Status,
		Evergreen: c.Evergreen,
	}
}

func linkCreate(p *transform.Payload) *acs.LinkCreate {
	c := storyCreate(p)
	return &acs.LinkCreate{
		Author: c.Author, Title: c.Title, Summary: c.Summary, Body: c.Body, MoreButtonText: c.MoreButtonText,
		ImageURL: c.ImageURL, Categories: c.Categories, ExternalID: c.ExternalID, Priority: c.Priority,
		PriorityUntilDateUTC: c.PriorityUntilDateUTC, PublishDateUTC: c.PublishDateUTC,
		ExpirationDateUTC: c.ExpirationDateUTC, Private: c.Private, Segments: c.Segments,
		ExclusiveToSegment: c.ExclusiveToSegment, AvailableInPartner: c.AvailableInPartner,
		EnableComments: c.EnableComments, EnableLinkTracking: c.EnableLinkTracking, Status: c.Status,
		Evergreen: c.Evergreen, ExternalURL: str(p.ExternalURL),
	}
}

func linkUpdate(p *transform.Payload) *acs.LinkUpdate {
	c, u := linkCreate(p), textsOf(p)
	return &acs.LinkUpdate{
		Author: c.Author, Title: c.Title, Summary: u.summary, Body: u.body, MoreButtonText: u.moreButtonText,
		ImageURL: u.imageURL, Categories: u.categories, ExternalID: c.ExternalID, Priority: c.Priority,
		PriorityUntilDateUTC: c.PriorityUntilDateUTC, PublishDateUTC: c.PublishDateUTC,
		ExpirationDateUTC: c.ExpirationDateUTC, Private: c.Private, Segments: u.segments,
		ExclusiveToSegment: c.ExclusiveToSegment, AvailableInPartner: c.AvailableInPartner,
		EnableComments: c.EnableComments, EnableLinkTracking: c.EnableLinkTracking, Status: c.Status,
		Evergreen: c.Evergreen, ExternalURL: text(p.ExternalURL),
	}
}

func eventCreate(p *transform.Payload) *acs.EventCreate {
	e := p.Event
	if e == nil {
		e = &transform.Event{}
	}
	return &acs.EventCreate{
		Author: ref(p.AuthorID), Title: str(p.Title), Summary: str(p.Summary), Body: str(p.Body),
		MoreButtonText: str(p.MoreButtonText), ImageURL: str(p.ImageURL), Categories: refs(p.CategoryIDs),
		ExternalID: str(p.ExternalID), Priority: ref(p.PriorityID), PriorityUntilDateUTC: when(p.PriorityUntil),
		Private: p.Private, Segments: refs(p.Segments), ExclusiveToSegment: p.ExclusiveToSegment,
		AvailableInPartner: p.AvailableInPartner, EnableComments: p.EnableComments,
		EnableLinkTracking: p.EnableLinkTracking, Status: ref(p.StatusID), ExternalURL: str(p.ExternalURL),
		EventLocation: str(e.Location), EventStreetAddress: str(e.StreetAddress), EventCity: str(e.City),
		EventPostalCode: str(e.PostalCode), EventRegion: str(e.Region), EventCountry: str(e.Country),
		EventAllDay: e.AllDay, EventStartDateTimeUTC: when(e.Start), EventEndDateTimeUTC: when(e.End),
		EventTimeZone: ref(e.TimeZoneID), EventRegistrationURL: str(e.RegistrationURL),
	}
}

func eventUpdate(p *transform.Payload) *acs.EventUpdate {
	c, u := eventCreate(p), textsOf(p)
	e := p.Event
	if e == nil {
		e = &transform.Event{}
	}
	return &acs.EventUpdate{
		Author: c.Author, Title: c.Title, Summary: u.summary, Body: u.body, MoreButtonText: u.moreButtonText,
		ImageURL: u.imageURL, Categories: u.categories, ExternalID: c.ExternalID, Priority: c.Priority,
		PriorityUntilDateUTC: c.PriorityUntilDateUTC, Private: c.Private, Segments: u.segments,
		ExclusiveToSegment: c.ExclusiveToSegment, AvailableInPartner: c.AvailableInPartner,
		EnableComments: c.EnableComments, EnableLinkTracking: c.EnableLinkTracking, Status: c.Status,
		ExternalURL: text(p.ExternalURL), EventLocation: text(e.Location), EventStreetAddress: text(e.StreetAddress),
		EventCity: text(e.City), EventPostalCode: text(e.PostalCode), EventRegion: text(e.Region),
		EventCountry: text(e.Country), EventAllDay: c.EventAllDay, EventStartDateTimeUTC: c.EventStartDateTimeUTC,
		EventEndDateTimeUTC: c.EventEndDateTimeUTC, EventTimeZone: c.EventTimeZone,
		EventRegistrationURL: text(e.RegistrationURL),
	}
}

func needCreate(p *transform.Payload) *acs.NeedCreate {
	c := &acs.NeedCreate{
		Title: str(p.Title), Summary: str(p.Summary), Body: str(p.Body),
		MoreButtonText: str(p.MoreButtonText), ImageURL: str(p.ImageURL), Categories: refs(p.CategoryIDs),
		ExternalID: str(p.ExternalID), Priority: ref(p.PriorityID), PriorityUntilDateUTC: when(p.PriorityUntil),
		PublishDateUTC: when(p.PublishDate), Private: p.Private, Segments: refs(p.Segments),
		ExclusiveToSegment: p.ExclusiveToSegment, AvailableInPartner: p.AvailableInPartner,
		EnableComments: p.EnableComments, EnableLinkTracking: p.EnableLinkTracking, Status: ref(p.StatusID),
	}
	if p.AuthorID != nil {
		c.Author = &acs.IDRef{ID: *p.AuthorID}
	}
	if n := p.Need; n != nil {
		if n.Quantity != nil {
			q := int64(*n.Quantity)
			c.NeedQuantity = &q
		}
		c.NeedByDateUTC = when(n.ByDate)
	}
	return c
}

func needUpdate(p *transform.Payload) *acs.NeedUpdate {
	u := textsOf(p)
	return &acs.NeedUpdate{
		Author: ref(p.AuthorID), Title: str(p.Title), Summary: u.summary, Body: u.body,
		MoreButtonText: u.moreButtonText, ImageURL: u.imageURL, Categories: u.categories,
		ExternalID: str(p.ExternalID), Priority: ref(p.PriorityID), PriorityUntilDateUTC: when(p.PriorityUntil),
		Private: p.Private, Segments: u.segments, ExclusiveToSegment: p.ExclusiveToSegment,
		AvailableInPartner: p.AvailableInPartner, EnableComments: p.EnableComments,
		EnableLinkTracking: p.EnableLinkTracking, Status: ref(p.StatusID), ExternalURL: text(p.ExternalURL),
	}
}

// CreateRequest returns the path and the request body a first publish of p
// sends (without the envelope): the fields of p's type, nothing else. p's
// category names are not in it: they become ids at send time.
func CreateRequest(p *transform.Payload) (path string, body any, err error) {
	switch p.Type {
	case transform.TypeStory:
		return "/v3/story", storyCreate(p), nil
	case transform.TypeLink:
		return "/v3/link", linkCreate(p), nil
	case transform.TypeEvent:
		return "/v3/event", eventCreate(p), nil
	case transform.TypeNeed:
		return "/v3/need", needCreate(p), nil
	}
	return "", nil, fmt.Errorf("%w: unknown content type %q", acs.ErrInvalid, p.Type)
}
