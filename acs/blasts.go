package acs

import (
	"context"
	"iter"
	"net/http"
)

// BlastsService handles /v3/blast (spec 4.6). The blast_status list is
// read through [ReferenceService.ListBlastStatuses].
type BlastsService service

// List returns one page of Blasts.
func (s *BlastsService) List(ctx context.Context, opts *ListOptions) ([]*Blast, *Response, error) {
	return list[Blast](ctx, s.client, "/v3/blast", TypeBlast, opts)
}

// All iterates over the Blasts of every page from opts.Page on.
func (s *BlastsService) All(ctx context.Context, opts *ListOptions) iter.Seq2[*Blast, error] {
	return all(ctx, opts, s.List)
}

// Get returns one Blast.
func (s *BlastsService) Get(ctx context.Context, id int64) (*Blast, *Response, error) {
	return call[Blast](ctx, s.client, http.MethodGet, "/v3/blast/{id}", nil, id)
}

// Create adds a Blast; its status decides whether it is drafted, sent or
// scheduled.
func (s *BlastsService) Create(ctx context.Context, req *BlastCreate) (*Blast, *Response, error) {
	if req == nil {
		return nil, nil, invalid("", "nil blast")
	}
	return call[Blast](ctx, s.client, http.MethodPost, "/v3/blast", req)
}

// Update changes Blast id; req.ID is set to id.
func (s *BlastsService) Update(ctx context.Context, id int64, req *BlastUpdate) (*Blast, *Response, error) {
	if req == nil {
		return nil, nil, invalid("", "nil blast update")
	}
	body := *req
	if err := setID(&body.ID, id); err != nil {
		return nil, nil, err
	}
	return call[Blast](ctx, s.client, http.MethodPut, "/v3/blast/{id}", &body, id)
}

// Delete removes Blast id.
func (s *BlastsService) Delete(ctx context.Context, id int64) (*Response, error) {
	return send(ctx, s.client, http.MethodDelete, "/v3/blast/{id}", nil, id)
}
