package acs

import (
	"context"
	"iter"
	"net/http"
)

// ContentService reads Content of every type through /v3/content (spec
// 4.3); the spec has no GET on the per-type paths.
type ContentService service

// List returns one page of Content of every type. To find the item with an
// external id:
//
//	opts := &acs.ListOptions{Filter: acs.Filter{}.Eq("external_id", id)}
func (s *ContentService) List(ctx context.Context, opts *ListOptions) ([]*Content, *Response, error) {
	return list[Content](ctx, s.client, "/v3/content", TypeContent, opts)
}

// All iterates over the Content of every page from opts.Page on.
func (s *ContentService) All(ctx context.Context, opts *ListOptions) iter.Seq2[*Content, error] {
	return all(ctx, opts, s.List)
}

// Get returns one piece of Content.
func (s *ContentService) Get(ctx context.Context, id int64) (*Content, *Response, error) {
	return call[Content](ctx, s.client, http.MethodGet, "/v3/content/{id}", nil, id)
}

// createContent and updateContent serve the four per-type services; the
// answer's Type is filled in when the server left it out, since the path
// says what it is.
func createContent(ctx context.Context, c *Client, typ string, req any) (*Content, *Response, error) {
	if isNilPointer(req) {
		return nil, nil, invalid("", "nil %s", typ)
	}
	out, resp, err := call[Content](ctx, c, http.MethodPost, "/v3/"+typ, req)
	if out != nil && out.Type == "" {
		out.Type = typ
	}
	return out, resp, err
}

// createRef is createContent reading back only the new item's id and self
// link: decoding the whole answer (every field, the HTML body among them)
// was a large share of the client's cost of a create, for callers that
// keep only the id.
func createRef(ctx context.Context, c *Client, typ string, req any) (*Ref, *Response, error) {
	if isNilPointer(req) {
		return nil, nil, invalid("", "nil %s", typ)
	}
	return call[Ref](ctx, c, http.MethodPost, "/v3/"+typ, req)
}

func updateContent(ctx context.Context, c *Client, typ string, id int64, req any) (*Content, *Response, error) {
	out, resp, err := call[Content](ctx, c, http.MethodPut, "/v3/"+typ+"/{id}", req, id)
	if out != nil && out.Type == "" {
		out.Type = typ
	}
	return out, resp, err
}

// StoriesService creates, updates and deletes Stories (/v3/story).
type StoriesService service

// Create adds a Story.
func (s *StoriesService) Create(ctx context.Context, req *StoryCreate) (*Content, *Response, error) {
	return createContent(ctx, s.client, TypeStory, req)
}

// CreateRef adds a Story like Create and reads back only its id and self
// link, which costs less than reading the whole answer.
func (s *StoriesService) CreateRef(ctx context.Context, req *StoryCreate) (*Ref, *Response, error) {
	return createRef(ctx, s.client, TypeStory, req)
}

// Update changes Story id; req.ID is set to id.
func (s *StoriesService) Update(ctx context.Context, id int64, req *StoryUpdate) (*Content, *Response, error) {
	if req == nil {
		return nil, nil, invalid("", "nil story update")
	}
	body := *req
	if err := setID(&body.ID, id); err != nil {
		return nil, nil, err
	}
	return updateContent(ctx, s.client, TypeStory, id, &body)
}

// Delete removes Story id.
func (s *StoriesService) Delete(ctx context.Context, id int64) (*Response, error) {
	return send(ctx, s.client, http.MethodDelete, "/v3/story/{id}", nil, id)
}

// EventsService creates, updates and deletes Events (/v3/event).
type EventsService service

// Create adds an Event.
func (s *EventsService) Create(ctx context.Context, req *EventCreate) (*Content, *Response, error) {
	return createContent(ctx, s.client, TypeEvent, req)
}

// CreateRef adds a Event like Create and reads back only its id and self
// link, which costs less than reading the whole answer.
func (s *EventsService) CreateRef(ctx context.Context, req *EventCreate) (*Ref, *Response, error) {
	return createRef(ctx, s.client, TypeEvent, req)
}

// Update changes Event id; req.ID is set to id.
func (s *EventsService) Update(ctx context.Context, id int64, req *EventUpdate) (*Content, *Response, error) {
	if req == nil {
		return nil, nil, invalid("", "nil event update")
	}
	body := *req
	if err := setID(&body.ID, id); err != nil {
		return nil, nil, err
	}
	return updateContent(ctx, s.client, TypeEvent, id, &body)
}

// Delete removes Event id.
func (s *EventsService) Delete(ctx context.Context, id int64) (*Response, error) {
	return send(ctx, s.client, http.MethodDelete, "/v3/event/{id}", nil, id)
}

// LinksService creates, updates and deletes Links (/v3/link).
type LinksService service

// Create adds a Link.
func (s *LinksService) Create(ctx context.Context, req *LinkCreate) (*Content, *Response, error) {
	return createContent(ctx, s.client, TypeLink, req)
}

// CreateRef adds a Link like Create and reads back only its id and self
// link, which costs less than reading the whole answer.
func (s *LinksService) CreateRef(ctx context.Context, req *LinkCreate) (*Ref, *Response, error) {
	return createRef(ctx, s.client, TypeLink, req)
}

// Update changes Link id; req.ID is set to id.
func (s *LinksService) Update(ctx context.Context, id int64, req *LinkUpdate) (*Content, *Response, error) {
	if req == nil {
		return nil, nil, invalid("", "nil link update")
	}
	body := *req
	if err := setID(&body.ID, id); err != nil {
		return nil, nil, err
	}
	return updateContent(ctx, s.client, TypeLink, id, &body)
}

// Delete removes Link id.
func (s *LinksService) Delete(ctx context.Context, id int64) (*Response, error) {
	return send(ctx, s.client, http.MethodDelete, "/v3/link/{id}", nil, id)
}

// NeedsService creates, updates and deletes Needs (/v3/need).
type NeedsService service

// Create adds a Need.
func (s *NeedsService) Create(ctx context.Context, req *NeedCreate) (*Content, *Response, error) {
	return createContent(ctx, s.client, TypeNeed, req)
}

// CreateRef adds a Need like Create and reads back only its id and self
// link, which costs less than reading the whole answer.
func (s *NeedsService) CreateRef(ctx context.Context, req *NeedCreate) (*Ref, *Response, error) {
	return createRef(ctx, s.client, TypeNeed, req)
}

// Update changes Need id; req.ID is set to id.
func (s *NeedsService) Update(ctx context.Context, id int64, req *NeedUpdate) (*Content, *Response, error) {
	if req == nil {
		return nil, nil, invalid("", "nil need update")
	}
	body := *req
	if err := setID(&body.ID, id); err != nil {
		return nil, nil, err
	}
	return updateContent(ctx, s.client, TypeNeed, id, &body)
}

// Delete removes Need id.
func (s *NeedsService) Delete(ctx context.Context, id int64) (*Response, error) {
	return send(ctx, s.client, http.MethodDelete, "/v3/need/{id}", nil, id)
}
