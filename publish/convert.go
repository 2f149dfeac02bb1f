package publish

import (
	"slices"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/transform"
)

// The builders below turn a resolved payload (category names already ids,
// publish date filled) into each type's request. Each sets exactly the
// fields its request type has; the compiler keeps a type from sending a
// field it lacks. Zero values are "not set" and stay nil, so an update
// leaves a field the item does not have as it is on the service.

func str(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

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
	c := storyCreate(p)
	return &acs.StoryUpdate{
		Author: c.Author, Title: c.Title, Summary: c.Summary, Body: c.Body, MoreButtonText: c.MoreButtonText,
		ImageURL: c.ImageURL, Categories: c.Categories, ExternalID: c.ExternalID, Priority: c.Priority,
		PriorityUntilDateUTC: c.PriorityUntilDateUTC, PublishDateUTC: c.PublishDateUTC,
		ExpirationDateUTC: c.ExpirationDateUTC, Private: c.Private, Segments: c.Segments,
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
	c := linkCreate(p)
	return &acs.LinkUpdate{
		Author: c.Author, Title: c.Title, Summary: c.Summary, Body: c.Body, MoreButtonText: c.MoreButtonText,
		ImageURL: c.ImageURL, Categories: c.Categories, ExternalID: c.ExternalID, Priority: c.Priority,
		PriorityUntilDateUTC: c.PriorityUntilDateUTC, PublishDateUTC: c.PublishDateUTC,
		ExpirationDateUTC: c.ExpirationDateUTC, Private: c.Private, Segments: c.Segments,
		ExclusiveToSegment: c.ExclusiveToSegment, AvailableInPartner: c.AvailableInPartner,
		EnableComments: c.EnableComments, EnableLinkTracking: c.EnableLinkTracking, Status: c.Status,
		Evergreen: c.Evergreen, ExternalURL: c.ExternalURL,
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
	c := eventCreate(p)
	return &acs.EventUpdate{
		Author: c.Author, Title: c.Title, Summary: c.Summary, Body: c.Body, MoreButtonText: c.MoreButtonText,
		ImageURL: c.ImageURL, Categories: c.Categories, ExternalID: c.ExternalID, Priority: c.Priority,
		PriorityUntilDateUTC: c.PriorityUntilDateUTC, Private: c.Private, Segments: c.Segments,
		ExclusiveToSegment: c.ExclusiveToSegment, AvailableInPartner: c.AvailableInPartner,
		EnableComments: c.EnableComments, EnableLinkTracking: c.EnableLinkTracking, Status: c.Status,
		ExternalURL: c.ExternalURL, EventLocation: c.EventLocation, EventStreetAddress: c.EventStreetAddress,
		EventCity: c.EventCity, EventPostalCode: c.EventPostalCode, EventRegion: c.EventRegion,
		EventCountry: c.EventCountry, EventAllDay: c.EventAllDay, EventStartDateTimeUTC: c.EventStartDateTimeUTC,
		EventEndDateTimeUTC: c.EventEndDateTimeUTC, EventTimeZone: c.EventTimeZone,
		EventRegistrationURL: c.EventRegistrationURL,
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
	return &acs.NeedUpdate{
		Author: ref(p.AuthorID), Title: str(p.Title), Summary: str(p.Summary), Body: str(p.Body),
		MoreButtonText: str(p.MoreButtonText), ImageURL: str(p.ImageURL), Categories: refs(p.CategoryIDs),
		ExternalID: str(p.ExternalID), Priority: ref(p.PriorityID), PriorityUntilDateUTC: when(p.PriorityUntil),
		Private: p.Private, Segments: refs(p.Segments), ExclusiveToSegment: p.ExclusiveToSegment,
		AvailableInPartner: p.AvailableInPartner, EnableComments: p.EnableComments,
		EnableLinkTracking: p.EnableLinkTracking, Status: ref(p.StatusID), ExternalURL: str(p.ExternalURL),
	}
}
