package dedupe

import (
	"context"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

var bPollState = []byte("pollstate")

// PollState implements [PollStates].
func (b *Bolt) PollState(ctx context.Context, feedID string) (PollState, bool, error) {
	if err := checkFeedID(feedID); err != nil {
		return PollState{}, false, err
	}
	var raw []byte
	err := b.view(ctx, "poll state of feed "+feedID, func(tx *bolt.Tx) error {
		if bk := tx.Bucket(bPollState); bk != nil {
			// Bytes read in a transaction are valid only inside it.
			raw = slices.Clone(bk.Get([]byte(feedID)))
		}
		return nil
	})
	if err != nil || raw == nil {
		return PollState{}, false, err
	}
	s, err := decodePollState(feedID, raw)
	if err != nil {
		return PollState{}, false, err
	}
	return s, true, nil
}

// SetPollState implements [PollStates].
func (b *Bolt) SetPollState(ctx context.Context, feedID string, s PollState) error {
	if err := checkFeedID(feedID); err != nil {
		return err
	}
	var raw []byte
	if !s.IsZero() {
		var err error
		if raw, err = s.encode(feedID); err != nil {
			return err
		}
	}
	return b.update(ctx, fmt.Sprintf("store poll state of feed %s", feedID), func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bPollState)
		if err != nil {
			return err
		}
		if raw == nil {
			return bk.Delete([]byte(feedID))
		}
		return bk.Put([]byte(feedID), raw)
	})
}
