package dedupe

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// keyed is a bucket of a transaction whose lookups and deletes share one
// cursor. bbolt's Get and Delete each start a cursor of their own, its
// path from the root allocated afresh; an outbox entry takes several
// lookups and deletes in each of a few buckets, and a claim or a batch of
// settles handles many entries, so they reuse one path per bucket
// instead. A keyed lives no longer than its transaction.
type keyed struct {
	*bolt.Bucket
	c *bolt.Cursor
}

// newKeyed wraps b; nil stays nil.
func newKeyed(b *bolt.Bucket) *keyed {
	if b == nil {
		return nil
	}
	return &keyed{Bucket: b}
}

// seek moves the shared cursor to key and reports whether key is there.
func (k *keyed) seek(key []byte) ([]byte, bool) {
	if k.c == nil {
		k.c = k.Bucket.Cursor()
	}
	found, v := k.c.Seek(key)
	return v, found != nil && bytes.Equal(found, key)
}

// Get is [bolt.Bucket.Get].
func (k *keyed) Get(key []byte) []byte {
	v, ok := k.seek(key)
	if !ok {
		return nil
	}
	return v
}

// Delete is [bolt.Bucket.Delete].
func (k *keyed) Delete(key []byte) error {
	if !k.Writable() {
		return berrors.ErrTxNotWritable
	}
	if _, ok := k.seek(key); !ok {
		return nil
	}
	return k.c.Delete()
}
