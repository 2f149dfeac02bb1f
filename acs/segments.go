package acs

import (
	"context"
	"iter"
	"net/http"
)

// SegmentsService handles /v3/segment (spec 4.4).
type SegmentsService service

// List returns one page of Segments; date_modified_utc is searchable.
func (s *SegmentsService) List(ctx context.Context, opts *ListOptions) ([]*Segment, *Response, error) {
	return list[Segment](ctx, s.client, "/v3/segment", TypeSegment, opts)
}

// All iterates over the Segments of every page from opts.Page on.
func (s *SegmentsService) All(ctx context.Context, opts *ListOptions) iter.Seq2[*Segment, error] {
	return all(ctx, opts, s.List)
}

// Get returns one Segment.
func (s *SegmentsService) Get(ctx context.Context, id int64) (*Segment, *Response, error) {
	return call[Segment](ctx, s.client, http.MethodGet, "/v3/segment/{id}", nil, id)
}

// Create adds a normal (non-dynamic) Segment and returns it with its new id.
func (s *SegmentsService) Create(ctx context.Context, req *SegmentCreate) (*Segment, *Response, error) {
	if req == nil {
		return nil, nil, invalid("", "nil segment")
	}
	return call[Segment](ctx, s.client, http.MethodPost, "/v3/segment", req)
}

// Update changes Segment id; req.ID is set to id.
func (s *SegmentsService) Update(ctx context.Context, id int64, req *SegmentUpdate) (*Segment, *Response, error) {
	if req == nil {
		return nil, nil, invalid("", "nil segment update")
	}
	body := *req
	if err := setID(&body.ID, id); err != nil {
		return nil, nil, err
	}
	return call[Segment](ctx, s.client, http.MethodPut, "/v3/segment/{id}", &body, id)
}

// Delete removes Segment id; its Subscribers are kept.
func (s *SegmentsService) Delete(ctx context.Context, id int64) (*Response, error) {
	return send(ctx, s.client, http.MethodDelete, "/v3/segment/{id}", nil, id)
}

// AddSubscriber adds Subscriber subscriberID to Segment segmentID. The spec
// allows one Subscriber per request, hence one id.
func (s *SegmentsService) AddSubscriber(ctx context.Context, segmentID, subscriberID int64) (*Response, error) {
	return send(ctx, s.client, http.MethodPost, "/v3/segment/{segment_id}/subscriber", &segmentMember{ID: subscriberID}, segmentID)
}

// ListSubscribers returns the Subscribers in Segment segmentID. The spec
// gives this endpoint no list parameters.
func (s *SegmentsService) ListSubscribers(ctx context.Context, segmentID int64) ([]*Subscriber, *Response, error) {
	return list[Subscriber](ctx, s.client, "/v3/segment/{segment_id}/subscriber", "", nil, segmentID)
}

// RemoveSubscriber removes Subscriber subscriberID from Segment segmentID.
func (s *SegmentsService) RemoveSubscriber(ctx context.Context, segmentID, subscriberID int64) (*Response, error) {
	return send(ctx, s.client, http.MethodDelete, "/v3/segment/{segment_id}/subscriber/{subscriber_id}", nil, segmentID, subscriberID)
}
