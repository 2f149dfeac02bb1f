package dedupe

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// PollState implements [PollStates].
func (r *Redis) PollState(ctx context.Context, feedID string) (PollState, bool, error) {
	if err := checkFeedID(feedID); err != nil {
		return PollState{}, false, err
	}
	b, err := r.c.Get(ctx, r.feedKey(feedID, "poll")).Bytes()
	if errors.Is(err, redis.Nil) {
		return PollState{}, false, nil
	}
	if err != nil {
		return PollState{}, false, fmt.Errorf("redis poll state of feed %q: %w", feedID, err)
	}
	s, err := decodePollState(feedID, b)
	if err != nil {
		return PollState{}, false, err
	}
	return s, true, nil
}

// SetPollState implements [PollStates].
func (r *Redis) SetPollState(ctx context.Context, feedID string, s PollState) error {
	if err := checkFeedID(feedID); err != nil {
		return err
	}
	key := r.feedKey(feedID, "poll")
	var err error
	if s.IsZero() {
		err = r.c.Del(ctx, key).Err()
	} else {
		var b []byte
		if b, err = s.encode(feedID); err != nil {
			return err
		}
		err = r.c.Set(ctx, key, b, 0).Err()
	}
	if err != nil {
		return fmt.Errorf("redis store poll state of feed %q: %w", feedID, err)
	}
	return nil
}

// PollStatesMany implements [PollStatesBatcher] in one pipeline (the keys
// live in as many cluster slots as feeds, so not one MGET).
func (r *Redis) PollStatesMany(ctx context.Context, feedIDs []string) ([]PollState, []bool, error) {
	for _, id := range feedIDs {
		if err := checkFeedID(id); err != nil {
			return nil, nil, err
		}
	}
	cmds := make([]*redis.StringCmd, len(feedIDs))
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range feedIDs {
			cmds[i] = p.Get(ctx, r.feedKey(id, "poll"))
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, fmt.Errorf("redis poll states of %d feeds: %w", len(feedIDs), err)
	}
	out := make([]PollState, len(feedIDs))
	ok := make([]bool, len(feedIDs))
	for i, c := range cmds {
		b, err := c.Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("redis poll state of feed %q: %w", feedIDs[i], err)
		}
		if out[i], err = decodePollState(feedIDs[i], b); err != nil {
			return nil, nil, err
		}
		ok[i] = true
	}
	return out, ok, nil
}
