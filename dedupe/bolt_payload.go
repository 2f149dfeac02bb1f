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
// CPU), and the bucket's pages halve.
//
// They stay in the "data" bucket, each value a codec byte and the
// payload. Values written before this format are the publisher's outbox
// entries as they are, JSON objects, so they begin with '{', which no
// codec byte is: they are read as they are. An older worker opening a
// newer file cannot read the codec byte either; it dead-letters such an
// entry without sending it ("undecodable outbox entry"), and
// `deadletters retry` run under a newer worker sends it (deploy/README.md).

// The codec byte leading a stored payload.
const (
	payloadRaw byte = 0
	payloadS2  byte = 1
	// payloadLegacy is the first byte of a value stored before codec
	// bytes: the publisher's entries are JSON objects.
	payloadLegacy byte = '{'
)

// encodePayload is the stored form of data: S2-compressed when that is
// smaller. It compresses into *scratch, reused from payload to payload,
// and returns a value of its own at its size: bbolt holds a value until
// the commit, and the room S2 asks for is 2.5 times what a payload
// compresses to.
func encodePayload(scratch *[]byte, data []byte) []byte {
	if n := s2.MaxEncodedLen(len(data)); cap(*scratch) < n {
		*scratch = make([]byte, n)
	}
	if enc := s2.Encode((*scratch)[:cap(*scratch)], data); len(enc) < len(data) {
		return append(append(make([]byte, 0, 1+len(enc)), payloadS2), enc...)
	}
	return append(append(make([]byte, 0, 1+len(data)), payloadRaw), data...)
}

// decodePayload returns the payload of a stored value, a new slice.
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
			return nil, fmt.Errorf("s2: %w", err)
		}
		return out, nil
	case payloadLegacy:
		return append([]byte{}, v...), nil
	default:
		return nil, fmt.Errorf("unknown codec %d", v[0])
	}
}

// payloads is the data bucket of a transaction.
type payloads struct {
	b *keyed
	// scratch is encodePayload's, shared by a transaction's puts; joined
	// holds a payload given in two parts (Change.Tail), joined.
	scratch, joined *[]byte
}

func payloadsOf(tx *bolt.Tx) payloads {
	return payloads{newKeyed(tx.Bucket(bData)), new([]byte), new([]byte)}
}

// has reports whether member has a payload.
func (p payloads) has(member string) bool { return p.b.Get([]byte(member)) != nil }

// get returns member's payload (a new slice), nil if none.
func (p payloads) get(member string) ([]byte, error) {
	v := p.b.Get([]byte(member))
	if v == nil {
		return nil, nil
	}
	data, err := decodePayload(v)
	if err != nil {
		return nil, fmt.Errorf("unreadable payload of %s: %w", member, err)
	}
	return data, nil
}

// put stores data followed by tail as member's payload.
func (p payloads) put(member string, data []byte, tail string) error {
	if tail != "" {
		*p.joined = append(append((*p.joined)[:0], data...), tail...)
		data = *p.joined
	}
	return p.b.Put([]byte(member), encodePayload(p.scratch, data))
}

func (p payloads) delete(member string) error { return p.b.Delete([]byte(member)) }
