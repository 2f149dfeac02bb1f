package dedupe

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

func (r *Redis) noteKey(feedID, name string) string {
	return r.prefix + "note:" + feedID + ":" + name
}

// Note implements [Notes].
func (r *Redis) Note(ctx context.Context, feedID, name string) ([]byte, bool, error) {
	if err := checkNote(feedID, name); err != nil {
		return nil, false, err
	}
	b, err := r.c.Get(ctx, r.noteKey(feedID, name)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read note %s of feed %s: %w", name, feedID, err)
	}
	return b, true, nil
}

// SetNote implements [Notes].
func (r *Redis) SetNote(ctx context.Context, feedID, name string, data []byte) error {
	if err := checkNote(feedID, name); err != nil {
		return err
	}
	var err error
	if data == nil {
		err = r.c.Del(ctx, r.noteKey(feedID, name)).Err()
	} else {
		err = r.c.Set(ctx, r.noteKey(feedID, name), data, 0).Err()
	}
	if err != nil {
		return fmt.Errorf("write note %s of feed %s: %w", name, feedID, err)
	}
	return nil
}
