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
	if err != nil {
		return PollState{}, false, err
	}
	if raw == nil {
		return PollState{}, false, nil
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

// PollStatesMany implements [PollStatesBatcher] in one read transaction.
func (b *Bolt) PollStatesMany(ctx context.Context, feedIDs []string) ([]PollState, []bool, error) {
	for _, id := range feedIDs {
		if err := checkFeedID(id); err != nil {
			return nil, nil, err
		}
	}
	raw := make([][]byte, len(feedIDs))
	err := b.view(ctx, fmt.Sprintf("poll states of %d feeds", len(feedIDs)), func(tx *bolt.Tx) error {
		bk := tx.Bucket(bPollState)
		if bk == nil {
			return nil
		}
		for i, id := range feedIDs {
			raw[i] = slices.Clone(bk.Get([]byte(id)))
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	out := make([]PollState, len(feedIDs))
	ok := make([]bool, len(feedIDs))
	for i, r := range raw {
		if r == nil {
			continue
		}
		if out[i], err = decodePollState(feedIDs[i], r); err != nil {
			return nil, nil, err
		}
		ok[i] = true
	}
	return out, ok, nil
}
