package dedupe

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// PollStates keep, beside a feed's validators, what its poller promised the
// feed's server and learned from it, so that a restarted worker, or another
// replica taking the feed's lease, continues from it rather than from
// zero: when the next poll may come (a Retry-After deadline, the end of a
// backoff), the consecutive failures, a 410 and the config that met it,
// and a permanent redirect. The store does not interpret them.
//
// Redis keeps each at "P f:F:poll" (a string, JSON) beside "P f:F:val";
// bbolt in the top-level bucket "pollstate" under the feed id. Both
// [Redis] and [Bolt] implement it.
type PollStates interface {
	// PollState returns a feed's poll state; ok is false when none is
	// stored.
	PollState(ctx context.Context, feedID string) (s PollState, ok bool, err error)
	// SetPollState stores a feed's poll state, replacing any; the zero
	// PollState deletes it.
	SetPollState(ctx context.Context, feedID string, s PollState) error
}

var (
	_ PollStates = (*Redis)(nil)
	_ PollStates = (*Bolt)(nil)
)

// PollState is one feed's stored poll state.
type PollState struct {
	// URL is the configured URL the state was learned at: a state whose
	// URL is not the feed's current one is stale (the config moved the
	// feed) and must be ignored.
	URL string `json:"url"`
	// NotBefore is the earliest next poll the server asked for
	// (Retry-After) or a backoff implies; zero when any time will do.
	NotBefore time.Time `json:"not_before,omitzero"`
	// Failures counts consecutive failed polls.
	Failures int `json:"failures,omitempty"`
	// GoneConfig is the fingerprint of the feed's config that met a 410;
	// empty when the feed is not gone.
	GoneConfig string `json:"gone_config,omitempty"`
	// MovedTo is the URL the feed permanently moved to (301/308).
	MovedTo string `json:"moved_to,omitempty"`
	// Warnings are the feed-level warnings in force, by code.
	Warnings map[string]string `json:"warnings,omitempty"`
}

// IsZero reports whether s holds nothing worth storing.
func (s PollState) IsZero() bool {
	return s.URL == "" && s.NotBefore.IsZero() && s.Failures == 0 && s.GoneConfig == "" && s.MovedTo == "" &&
		len(s.Warnings) == 0
}

func (s PollState) encode(feedID string) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode poll state of feed %s: %w", feedID, err)
	}
	return b, nil
}

func decodePollState(feedID string, b []byte) (PollState, error) {
	var s PollState
	if err := json.Unmarshal(b, &s); err != nil {
		return PollState{}, fmt.Errorf("decode poll state of feed %s: %w", feedID, err)
	}
	if !s.NotBefore.IsZero() {
		s.NotBefore = s.NotBefore.Local()
	}
	return s, nil
}

// PollStatesBatcher reads the poll states of many feeds at once (a pass
// over every feed at start, `feedworker once`).
type PollStatesBatcher interface {
	// PollStatesMany is [PollStates.PollState] for each feed, in order.
	PollStatesMany(ctx context.Context, feedIDs []string) (s []PollState, ok []bool, err error)
}

var (
	_ PollStatesBatcher = (*Redis)(nil)
	_ PollStatesBatcher = (*Bolt)(nil)
)
