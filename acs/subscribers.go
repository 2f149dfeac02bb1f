package acs

import (
	"context"
	"iter"
	"net/http"
)

// SubscribersService handles /v3/subscriber (spec 4.2).
type SubscribersService service

// List returns one page of Subscribers.
func (s *SubscribersService) List(ctx context.Context, opts *ListOptions) ([]*Subscriber, *Response, error) {
	return list[Subscriber](ctx, s.client, "/v3/subscriber", TypeSubscriber, opts)
}

// All iterates over the Subscribers of every page from opts.Page on.
func (s *SubscribersService) All(ctx context.Context, opts *ListOptions) iter.Seq2[*Subscriber, error] {
	return all(ctx, opts, s.List)
}

// Get returns one Subscriber.
func (s *SubscribersService) Get(ctx context.Context, id int64) (*Subscriber, *Response, error) {
	return call[Subscriber](ctx, s.client, http.MethodGet, "/v3/subscriber/{id}", nil, id)
}

// Create adds a Subscriber. first_name, last_name, email, subscriber_status
// (2-4) and subscriber_privacy_level (1-3) are checked before sending.
func (s *SubscribersService) Create(ctx context.Context, req *SubscriberCreate) (*Subscriber, *Response, error) {
	if req == nil {
		return nil, nil, invalid("", "nil subscriber")
	}
	return call[Subscriber](ctx, s.client, http.MethodPost, "/v3/subscriber", req)
}

// Update changes Subscriber id; req.ID is set to id. The status cannot be
// set to 1 (unsubscribed): use Unsubscribe.
func (s *SubscribersService) Update(ctx context.Context, id int64, req *SubscriberUpdate) (*Subscriber, *Response, error) {
	if req == nil {
		return nil, nil, invalid("", "nil subscriber update")
	}
	body := *req
	if err := setID(&body.ID, id); err != nil {
		return nil, nil, err
	}
	return call[Subscriber](ctx, s.client, http.MethodPut, "/v3/subscriber/{id}", &body, id)
}

// Unsubscribe turns Subscriber id into an Unsubscribe with the same id. req
// is optional: nil sends no body at all.
func (s *SubscribersService) Unsubscribe(ctx context.Context, id int64, req *UnsubscribeRequest) (*Unsubscribe, *Response, error) {
	return call[Unsubscribe](ctx, s.client, http.MethodPost, "/v3/subscriber/{id}/unsubscribe", req, id)
}

// Interests returns the Categories Subscriber subscriberID is most
// interested in. The spec gives this endpoint no list parameters.
func (s *SubscribersService) Interests(ctx context.Context, subscriberID int64) ([]*Interest, *Response, error) {
	return list[Interest](ctx, s.client, "/v3/subscriber/{subscriber_id}/subscriber_interest", "", nil, subscriberID)
}

// UnsubscribesService handles /v3/unsubscribe (spec 4.2).
type UnsubscribesService service

// List returns one page of Unsubscribes.
func (s *UnsubscribesService) List(ctx context.Context, opts *ListOptions) ([]*Unsubscribe, *Response, error) {
	return list[Unsubscribe](ctx, s.client, "/v3/unsubscribe", TypeUnsubscribe, opts)
}

// All iterates over the Unsubscribes of every page from opts.Page on.
func (s *UnsubscribesService) All(ctx context.Context, opts *ListOptions) iter.Seq2[*Unsubscribe, error] {
	return all(ctx, opts, s.List)
}

// Get returns one Unsubscribe; id is the id the Subscriber had.
func (s *UnsubscribesService) Get(ctx context.Context, id int64) (*Unsubscribe, *Response, error) {
	return call[Unsubscribe](ctx, s.client, http.MethodGet, "/v3/unsubscribe/{id}", nil, id)
}
