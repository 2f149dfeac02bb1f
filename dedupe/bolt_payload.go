package dedupe

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"
	bolt "go.etcd.io/bbolt"
)

// Outbox payloads, compressed. A payload (an item's post, JSON with its
// HTML, 2.8 KB in the bench) is most of a page: bbolt keeps at least two
// values to a leaf, so stored as they are, payloads took leaves of two or
// three pages, written at the enqueue and again at the settle's delete,
// a quarter of the pages a first pass wrote. S2 stores them in 40% of the
// size for about 3 µs of CPU each (stdlib flate: 32%, at many times the
// CPU), and the payload bucket's pages halve.
//
// They are kept in the "payload" bucket, each value a codec byte and the
// payload; the "data" bucket of files written before holds raw payloads
// and is still read, so a file with entries queued opens as it is: a
// payload is looked up in "payload", then in "data", and a write or
// delete clears the member from "data" (a no-op without it there).

var bPayload = []byte("payload")

// The codec byte leading a value of the payload bucket.
const (
	payloadRaw byte = 0
	payloadS2  byte = 1
)

// encodePayload is the stored form of data: S2-compressed when that is
// smaller.
func encodePayload(data []byte) []byte {
	buf := make([]byte, 1+s2.MaxEncodedLen(len(data)))
	enc := s2.Encode(buf[1:], data)
	if len(enc) < len(data) {
		buf[0] = payloadS2
		return buf[:1+len(enc)]
	}
	buf = append(buf[:1], data...)
	buf[0] = payloadRaw
	return buf
}

// decodePayload returns the payload of a stored value of the payload
// bucket, a new slice.
func decodePayload(v []byte) ([]byte, error) {
	if len(v) == 0 {
		return nil, errors.New("empty payload value")
	}
	switch v[0] {
	case payloadRaw:
		return append([]byte{}, v[1:]...), nil
	case payloadS2:
		out, err := s2.Decode(nil, v[1:])
		if err != nil {
			return nil, fmt.Errorf("payload: %w", err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("payload: unknown codec %d", v[0])
	}
}

// payloads are the payload buckets of a transaction: the current one and
// that of files written before (OpenBolt makes both).
type payloads struct{ cur, old *bolt.Bucket }

func payloadsOf(tx *bolt.Tx) payloads {
	return payloads{tx.Bucket(bPayload), tx.Bucket(bData)}
}

// has reports whether member has a payload.
func (p payloads) has(member string) bool {
	return p.cur.Get([]byte(member)) != nil || p.old.Get([]byte(member)) != nil
}

// get returns member's payload (a new slice), nil if none.
func (p payloads) get(member string) ([]byte, error) {
	if v := p.cur.Get([]byte(member)); v != nil {
		return decodePayload(v)
	}
	if v := p.old.Get([]byte(member)); v != nil {
		return append([]byte{}, v...), nil
	}
	return nil, nil
}

func (p payloads) put(member string, data []byte) error {
	if err := p.old.Delete([]byte(member)); err != nil {
		return err
	}
	return p.cur.Put([]byte(member), encodePayload(data))
}

func (p payloads) delete(member string) error {
	return errors.Join(p.old.Delete([]byte(member)), p.cur.Delete([]byte(member)))
}
