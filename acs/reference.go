package acs

import "context"

// ReferenceService reads the read-only reference lists (spec 2.2). The spec
// gives these endpoints no list parameters.
type ReferenceService service

// ListPrivacyLevels returns /v3/subscriber_privacy_level.
func (s *ReferenceService) ListPrivacyLevels(ctx context.Context) ([]*ReferenceItem, *Response, error) {
	return list[ReferenceItem](ctx, s.client, "/v3/subscriber_privacy_level", "", nil)
}

// ListSubscriberStatuses returns /v3/subscriber_status.
func (s *ReferenceService) ListSubscriberStatuses(ctx context.Context) ([]*ReferenceItem, *Response, error) {
	return list[ReferenceItem](ctx, s.client, "/v3/subscriber_status", "", nil)
}

// ListDepartureCodes returns /v3/subscriber_departure_code: the codes an
// Unsubscribe may carry, each with an id and a description.
func (s *ReferenceService) ListDepartureCodes(ctx context.Context) ([]*ReferenceItem, *Response, error) {
	return list[ReferenceItem](ctx, s.client, "/v3/subscriber_departure_code", "", nil)
}

// ListBlastStatuses returns /v3/blast_status.
func (s *ReferenceService) ListBlastStatuses(ctx context.Context) ([]*ReferenceItem, *Response, error) {
	return list[ReferenceItem](ctx, s.client, "/v3/blast_status", "", nil)
}
