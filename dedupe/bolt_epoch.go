package dedupe

import (
	"context"
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	bStore   = []byte("store")
	kEpochID = []byte("epoch")
)

// Epoch implements [Reconciler.Epoch]: the key "epoch" of the bucket
// "store", written by the first call on a new file.
func (b *Bolt) Epoch(ctx context.Context) (string, bool, error) {
	var id string
	var created bool
	// Read first: the marker is written once per file, and a write
	// transaction costs a commit and an fsync even when it changes nothing
	// (a pass asks once per feed).
	err := b.view(ctx, "epoch marker", func(tx *bolt.Tx) error {
		if bk := tx.Bucket(bStore); bk != nil {
			if v := bk.Get(kEpochID); v != nil {
				id = string(v)
			}
		}
		return nil
	})
	if err != nil {
		return "", false, err
	}
	if id != "" {
		return id, false, nil
	}
	err = b.update(ctx, "epoch marker", func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bStore)
		if err != nil {
			return err
		}
		if v := bk.Get(kEpochID); v != nil {
			id = string(v)
			return nil
		}
		if id, err = newEpochID(); err != nil {
			return err
		}
		created = true
		return bk.Put(kEpochID, []byte(id))
	})
	if err != nil {
		return "", false, err
	}
	return id, created, nil
}

// RecordFound implements [Reconciler.RecordFound] in one transaction, as
// the Redis script does.
func (b *Bolt) RecordFound(ctx context.Context, feedID string, found []Found, now time.Time) (int, error) {
	if err := checkFound(feedID, found); err != nil {
		return 0, err
	}
	changed := 0
	nowMS := ms(now)
	err := b.update(ctx, "record found items of feed "+feedID, func(tx *bolt.Tx) error {
		changed = 0
		f, err := feedOf(tx, feedID, true)
		if err != nil {
			return err
		}
		for _, it := range found {
			r, ok, err := f.record(it.ExternalID)
			if err != nil {
				return err
			}
			switch {
			case !ok:
				r = Record{Hash: it.Hash, PublishedHash: it.Hash, ContentID: it.ContentID, Type: it.Type,
					FirstSeen: fromMS(nowMS), LastPublished: fromMS(nowMS)}
			case r.ContentID == 0:
				// What is queued goes out as an update of the content found.
				r.ContentID, r.Type, r.PublishedHash, r.PendingHash, r.State = it.ContentID, it.Type, "", "", StateActive
			default:
				continue
			}
			if err := f.putRecord(it.ExternalID, r); err != nil {
				return err
			}
			if err := f.touch(it.ExternalID, nowMS); err != nil {
				return err
			}
			changed++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return changed, nil
}
