package dedupe

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// Epochs: telling a store that forgot from one that remembers.
//
// A store keeps an epoch marker: a random id written once, by the first
// call to [Reconciler.Epoch] on a store without one. A Redis emptied by a
// restart without persistence, a FLUSHALL, a failover to an empty replica,
// or an embedded file deleted and created again has no marker, or a new
// one: that is how a worker learns that the store no longer knows what was
// published, and must ask the service (package publish's reconcile mode)
// before posting anything again. On Redis the marker is one key per
// partition, P{T}epoch, each read by a single-key script (legal on Redis
// Cluster), so losing any node's data changes the epoch; on bbolt
// it is the key "epoch" of the bucket "store".
//
// What the service is found to hold is written with [Reconciler.RecordFound]:
// the item becomes published with that content id, so a later edit is a PUT
// and the same version is neither posted nor put.

// Reconciler is a store with an epoch marker that can record items found on
// the service. Both stores of this package implement it.
type Reconciler interface {
	// Epoch returns the store's epoch marker, writing a new one when there
	// is none; created reports that this call wrote it: the store is new,
	// or it lost its data.
	Epoch(ctx context.Context) (id string, created bool, err error)
	// RecordFound records items of one feed that the service already has,
	// atomically. An item without a record becomes published with
	// ContentID, Type and Hash (so the same version is not sent again); an
	// item with a record but no content id (queued, seen only or dead)
	// gets the content id and becomes active, its pending mark cleared, so
	// that what is queued is sent as an update; an item that has a content
	// id is left as it is. It returns how many items it changed.
	RecordFound(ctx context.Context, feedID string, found []Found, now time.Time) (int, error)
}

// FileCreator is a store kept in a file, which knows whether its open made
// the file: a new file is no loss to warn of (a Redis prefix never written
// cannot be told from an emptied one).
type FileCreator interface {
	// CreatedFile is the file's path if the store's open made it, ""
	// otherwise.
	CreatedFile() string
}

// Found is an item found on the service by its external id.
type Found struct {
	ExternalID string
	// Hash is the item's hash as the feed has it now, recorded as the
	// published one.
	Hash      string
	ContentID int64
	Type      string
}

var (
	_ Reconciler = (*Redis)(nil)
	_ Reconciler = (*Bolt)(nil)

	_ FileCreator = (*Bolt)(nil)
)

// newEpochID is a random marker: 16 bytes, as hex.
func newEpochID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("new epoch marker: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func checkFound(feedID string, found []Found) error {
	if err := checkFeedID(feedID); err != nil {
		return err
	}
	for _, f := range found {
		if err := (Key{feedID, f.ExternalID}).check(); err != nil {
			return err
		}
		if f.ContentID <= 0 {
			return fmt.Errorf("found %s: %w: no content id", Key{feedID, f.ExternalID}, ErrInvalid)
		}
		if err := checkToken("hash", f.Hash); err != nil {
			return err
		}
		if err := checkToken("type", f.Type); err != nil {
			return err
		}
	}
	return nil
}
