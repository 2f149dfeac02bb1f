package dedupe

import (
	"context"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

var bNotes = []byte("notes")

// Note implements [Notes].
func (b *Bolt) Note(ctx context.Context, feedID, name string) ([]byte, bool, error) {
	if err := checkNote(feedID, name); err != nil {
		return nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	var out []byte
	err := b.db.View(func(tx *bolt.Tx) error {
		if bk := tx.Bucket(bNotes); bk != nil {
			// Bytes read in a transaction are valid only inside it.
			out = slices.Clone(bk.Get([]byte(feedID + "/" + name)))
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("read note %s of feed %s: %w", name, feedID, err)
	}
	return out, out != nil, nil
}

// SetNote implements [Notes].
func (b *Bolt) SetNote(ctx context.Context, feedID, name string, data []byte) error {
	if err := checkNote(feedID, name); err != nil {
		return err
	}
	// Group-committed with the store's other writes (a fetch with news
	// sets one): a transaction of its own cost a commit and its fsyncs,
	// and held the writer lock from the committer meanwhile.
	err := b.update(ctx, "set note", func(tx *bolt.Tx) error {
		return setNotesTx(tx, feedID, []NoteWrite{{Name: name, Data: data}})
	})
	if err != nil {
		return fmt.Errorf("write note %s of feed %s: %w", name, feedID, err)
	}
	return nil
}

// setNotesTx sets feedID's notes (names checked) in a write transaction.
func setNotesTx(tx *bolt.Tx, feedID string, notes []NoteWrite) error {
	if len(notes) == 0 {
		return nil
	}
	bk, err := tx.CreateBucketIfNotExists(bNotes)
	if err != nil {
		return err
	}
	for _, n := range notes {
		key := []byte(feedID + "/" + n.Name)
		if n.Data == nil {
			err = bk.Delete(key)
		} else {
			// bbolt keeps the value until the commit: a copy of its own.
			err = bk.Put(key, slices.Clip(append([]byte{}, n.Data...)))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
