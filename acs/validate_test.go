package acs

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// TestValidation: requests breaking a rule of the spec fail with
// ErrInvalid, name the field, and send nothing.
func TestValidation(t *testing.T) {
	t.Parallel()
	good := SubscriberCreate{
		FirstName: "Ada", LastName: "Lovelace", Email: "ada@example.com",
		SubscriberStatus: IDRef{4}, SubscriberPrivacyLevel: IDRef{1},
	}
	with := func(f func(*SubscriberCreate)) *SubscriberCreate {
		s := good
		f(&s)
		return &s
	}
	zero := Timestamp{}
	far := NewTimestamp(time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC))

	tests := []struct {
		name  string
		call  func(ctx context.Context, c *Client) error
		field string
	}{
		{"first name", func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Create(ctx, with(func(s *SubscriberCreate) { s.FirstName = " " }))
			return err
		}, "first_name"},
		{"last name", func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Create(ctx, with(func(s *SubscriberCreate) { s.LastName = "" }))
			return err
		}, "last_name"},
		{"email", func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Create(ctx, with(func(s *SubscriberCreate) { s.Email = "" }))
			return err
		}, "email"},
		{"status missing", func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Create(ctx, with(func(s *SubscriberCreate) { s.SubscriberStatus = IDRef{} }))
			return err
		}, "subscriber_status.id"},
		{"status 1 reserved", func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Create(ctx, with(func(s *SubscriberCreate) { s.SubscriberStatus = IDRef{1} }))
			return err
		}, "subscriber_status.id"},
		{"status 5", func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Create(ctx, with(func(s *SubscriberCreate) { s.SubscriberStatus = IDRef{5} }))
			return err
		}, "subscriber_status.id"},
		{"privacy 0", func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Create(ctx, with(func(s *SubscriberCreate) { s.SubscriberPrivacyLevel = IDRef{0} }))
			return err
		}, "subscriber_privacy_level.id"},
		{"privacy 4", func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Create(ctx, with(func(s *SubscriberCreate) { s.SubscriberPrivacyLevel = IDRef{4} }))
			return err
		}, "subscriber_privacy_level.id"},
		{"update status 1", func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Update(ctx, 3, &SubscriberUpdate{SubscriberStatus: IDRef{1}, SubscriberPrivacyLevel: IDRef{1}})
			return err
		}, "subscriber_status.id"},
		{"update privacy missing", func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Update(ctx, 3, &SubscriberUpdate{SubscriberStatus: IDRef{2}})
			return err
		}, "subscriber_privacy_level.id"},
		{"update empty email", func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Update(ctx, 3, &SubscriberUpdate{Email: Ptr(""), SubscriberStatus: IDRef{2}, SubscriberPrivacyLevel: IDRef{1}})
			return err
		}, "email"},
		{"segment add: one positive subscriber id", func(ctx context.Context, c *Client) error {
			_, err := c.Segments.AddSubscriber(ctx, 1, 0)
			return err
		}, "id"},
		{"path id", func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Get(ctx, 0)
			return err
		}, "id"},
		{"segment path id", func(ctx context.Context, c *Client) error {
			_, err := c.Segments.RemoveSubscriber(ctx, -1, 5)
			return err
		}, "segment_id"},
		{"zero timestamp", func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Unsubscribe(ctx, 1, &UnsubscribeRequest{TerminationDateUTC: &zero})
			return err
		}, "termination_date_utc"},
		{"timestamp out of shape", func(ctx context.Context, c *Client) error {
			_, _, err := c.Events.Create(ctx, &EventCreate{EventEndDateTimeUTC: &far})
			return err
		}, "event_end_date_time_utc"},
		{"segment description", func(ctx context.Context, c *Client) error {
			_, _, err := c.Segments.Create(ctx, &SegmentCreate{})
			return err
		}, "description"},
		{"category description", func(ctx context.Context, c *Client) error {
			_, _, err := c.Categories.Create(ctx, &CategoryCreate{Description: "  "})
			return err
		}, "description"},
		{"nil body", func(ctx context.Context, c *Client) error {
			_, _, err := c.Stories.Create(ctx, nil)
			return err
		}, ""},
	}
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, 200, oneReply) })
	c := newTestClient(t, rec)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(context.Background(), c)
			var ve *ValidationError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a *ValidationError matching ErrInvalid", err)
			}
			if ve.Field != tt.field {
				t.Errorf("field = %q, want %q (err %v)", ve.Field, tt.field, err)
			}
		})
	}
	if n := rec.count(); n != 0 {
		t.Errorf("server saw %d requests, want none", n)
	}
	// And a good one goes through.
	if _, _, err := c.Subscribers.Create(context.Background(), &good); err != nil {
		t.Errorf("valid subscriber refused: %v", err)
	}
}
