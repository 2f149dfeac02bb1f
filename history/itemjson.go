package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/feedworker/feedworker/internal/jsonfast"
)

// The embedded store merges item records in the worker: each flush reads
// an item's stored JSON, merges the new fates and writes it back, where
// Redis does the same work on its server. encoding/json spent about 0.33
// CPU s of a 1,000 × 20 first pass there, by reflection; this writes and
// reads the record's fixed shape directly. The bytes written are
// json.Marshal's (TestItemJSONMatchesEncodingJSON), and the reader takes
// only that shape, handing anything else to json.Unmarshal, so both read
// every stored record the same.

// itemJSONSize is about the length of it's JSON, to size its buffer once.
func itemJSONSize(it *Item) int {
	n := 64 + len(it.ID) + len(it.Title) + len(it.Link) + len(it.GUID) + 40*len(it.Digest)
	for i := range it.Events {
		n += 80 + len(it.Events[i].Detail) + 16*len(it.Events[i].Fields)
	}
	return n
}

// appendItemJSON appends json.Marshal(it).
func appendItemJSON(dst []byte, it *Item) []byte {
	return appendRecordJSON(dst, it, nil)
}

// appendRecordJSON appends json.Marshal(it), with the digest dg (the JSON
// of its stored map) in place of it.Digest when dg is not nil.
func appendRecordJSON(dst []byte, it *Item, dg []byte) []byte {
	dst = appendNamesJSON(dst, it.ID, it.Title, it.Link, it.GUID)
	dst = append(dst, `,"f0":`...)
	dst = strconv.AppendInt(dst, it.FirstSeen, 10)
	if it.LastSeen != 0 {
		dst = append(dst, `,"f1":`...)
		dst = strconv.AppendInt(dst, it.LastSeen, 10)
	}
	if dg != nil {
		dst = append(dst, `,"dg":`...)
		dst = append(dst, dg...)
	} else if len(it.Digest) > 0 {
		dst = append(dst, `,"dg":{`...)
		keys := make([]string, 0, len(it.Digest))
		for k := range it.Digest {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonfast.AppendStringHTML(dst, k)
			dst = append(dst, ':')
			dst = jsonfast.AppendStringHTML(dst, it.Digest[k])
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `,"ev":`...)
	if it.Events == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range it.Events {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendEventJSON(dst, &it.Events[i])
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// updateJSONSize is about the length of u's JSON, to size a buffer: the
// keys and numbers of an update and its event, and a digest's only when it
// has one (a delivery's update, most of a flush, is about 85 bytes).
func updateJSONSize(u *Update) int {
	n := 100 + len(u.ID) + len(u.Title) + len(u.Link) + len(u.GUID) + len(u.Event.Detail) + 16*len(u.Event.Fields)
	if !u.Digest.IsZero() {
		n += 220
	}
	return n
}

// appendUpdateJSON appends json.Marshal(u): what the Redis history's
// script is given for each update (encoding/json was most of a write's
// CPU there).
func appendUpdateJSON(dst []byte, u *Update) []byte {
	dst = appendNamesJSON(dst, u.ID, u.Title, u.Link, u.GUID)
	if u.Seen {
		dst = append(dst, `,"seen":true`...)
	}
	if !u.Digest.IsZero() {
		dst = append(dst, `,"dg":`...)
		dst = u.Digest.appendJSON(dst)
	}
	dst = append(dst, `,"e":`...)
	dst = appendEventJSON(dst, &u.Event)
	return append(dst, '}')
}

func appendEventJSON(dst []byte, e *Event) []byte {
	dst = append(dst, `{"k":`...)
	dst = jsonfast.AppendStringHTML(dst, string(e.Kind))
	dst = append(dst, `,"t":`...)
	dst = strconv.AppendInt(dst, e.At, 10)
	for _, f := range [...]struct {
		name string
		v    int64
	}{{`,"n":`, int64(e.Count)}, {`,"id":`, e.ContentID}, {`,"a":`, int64(e.Attempt)}, {`,"nx":`, e.Next}, {`,"s":`, int64(e.Status)}} {
		if f.v != 0 {
			dst = append(dst, f.name...)
			dst = strconv.AppendInt(dst, f.v, 10)
		}
	}
	if e.Detail != "" {
		dst = append(dst, `,"d":`...)
		dst = jsonfast.AppendStringHTML(dst, e.Detail)
	}
	if len(e.Fields) > 0 {
		dst = append(dst, `,"f":`...)
		dst = jsonfast.AppendStringsHTML(dst, e.Fields)
	}
	return append(dst, '}')
}

// parseItemJSON reads a stored item record as json.Unmarshal does.
func parseItemJSON(data []byte) (Item, error) {
	if it, ok := scanItem(data); ok {
		return it, nil
	}
	var it Item
	if err := json.Unmarshal(data, &it); err != nil {
		return Item{}, fmt.Errorf("decode item record: %w", err)
	}
	return it, nil
}

// itemScanner reads the shape appendItemJSON writes. Anything else
// (whitespace, unknown keys, other types, floats) makes it give up, and
// json.Unmarshal reads the record instead.
type itemScanner struct {
	b   []byte
	i   int
	bad bool
}

func scanItem(data []byte) (Item, bool) {
	it, _, ok := scanRecord(data, false)
	return it, ok
}

// parseRecordJSON reads a stored item record as parseItemJSON does, but
// leaves its digest as the JSON it is stored as (dg, a copy; nil when the
// record has none), for a write that may not need it. A record of another
// shape is read whole, its digest in it.Digest and dg nil.
func parseRecordJSON(data []byte) (it Item, dg []byte, err error) {
	if it, dg, ok := scanRecord(data, true); ok {
		return it, dg, nil
	}
	it, err = parseItemJSON(data)
	return it, nil, err
}

// scanRecord is scanItem; with rawDigest, the digest is checked for its
// shape (an object of strings) and returned as its bytes, not parsed.
func scanRecord(data []byte, rawDigest bool) (Item, []byte, bool) {
	s := itemScanner{b: data}
	var it Item
	var dg []byte
	keys := [...]string{"id", "ti", "l", "g", "f0", "f1", "dg", "ev"}
	var seen uint16
	s.object(func(key string) {
		s.once(&seen, key, keys[:])
		switch key {
		case "id":
			it.ID = s.str()
		case "ti":
			it.Title = s.str()
		case "l":
			it.Link = s.str()
		case "g":
			it.GUID = s.str()
		case "f0":
			it.FirstSeen = s.int(64)
		case "f1":
			it.LastSeen = s.int(64)
		case "dg":
			if s.null() {
				it.Digest = nil
				return
			}
			if rawDigest {
				start := s.i
				s.object(func(string) { s.str() })
				// A copy: the record's bytes are the store's, and the
				// digest outlives the read within the write.
				dg = bytes.Clone(s.b[start:s.i])
				if string(dg) == "{}" {
					// Read as the whole record would be: an empty map.
					it.Digest, dg = map[string]string{}, nil
				}
				return
			}
			if it.Digest == nil {
				it.Digest = map[string]string{}
			}
			s.object(func(k string) { it.Digest[k] = s.str() })
		case "ev":
			if s.null() {
				it.Events = nil
				return
			}
			it.Events = it.Events[:0]
			if it.Events == nil {
				it.Events = []Event{}
			}
			s.array(func() {
				var e Event
				s.event(&e)
				it.Events = append(it.Events, e)
			})
		default:
			s.bad = true
		}
	})
	if s.i != len(s.b) {
		s.bad = true
	}
	return it, dg, !s.bad
}

func (s *itemScanner) event(e *Event) {
	keys := [...]string{"k", "t", "n", "id", "a", "nx", "s", "d", "f"}
	var seen uint16
	s.object(func(key string) {
		s.once(&seen, key, keys[:])
		switch key {
		case "k":
			e.Kind = Kind(s.str())
		case "t":
			e.At = s.int(64)
		case "n":
			e.Count = int(s.int(strconv.IntSize))
		case "id":
			e.ContentID = s.int(64)
		case "a":
			e.Attempt = int(s.int(strconv.IntSize))
		case "nx":
			e.Next = s.int(64)
		case "s":
			e.Status = int(s.int(strconv.IntSize))
		case "d":
			e.Detail = s.str()
		case "f":
			if s.null() {
				e.Fields = nil
				return
			}
			e.Fields = e.Fields[:0]
			if e.Fields == nil {
				e.Fields = []string{}
			}
			s.array(func() { e.Fields = append(e.Fields, s.str()) })
		default:
			s.bad = true
		}
	})
}

// once marks the input bad when key comes a second time in one object
// (json.Unmarshal would merge the two values), or is not one of keys.
func (s *itemScanner) once(seen *uint16, key string, keys []string) {
	i := slices.Index(keys, key)
	if i < 0 || *seen&(1<<i) != 0 {
		s.bad = true
		return
	}
	*seen |= 1 << i
}

// expect consumes c, or marks the input bad.
func (s *itemScanner) expect(c byte) bool {
	if s.bad || s.i >= len(s.b) || s.b[s.i] != c {
		s.bad = true
		return false
	}
	s.i++
	return true
}

// object reads {"key":value,...}, calling field for each value.
func (s *itemScanner) object(field func(key string)) {
	s.list('{', '}', func() {
		key := s.str()
		if s.expect(':') {
			field(key)
		}
	})
}

// array reads [value,...], calling elem for each value.
func (s *itemScanner) array(elem func()) {
	s.list('[', ']', elem)
}

// list reads open, then elements separated by commas, then closing; each
// element is read by elem.
func (s *itemScanner) list(open, closing byte, elem func()) {
	if !s.expect(open) {
		return
	}
	if s.i < len(s.b) && s.b[s.i] == closing {
		s.i++
		return
	}
	for !s.bad {
		elem()
		if s.bad || s.i >= len(s.b) {
			s.bad = true
			return
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case closing:
			s.i++
			return
		default:
			s.bad = true
		}
	}
}

// null consumes a null.
func (s *itemScanner) null() bool {
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// str reads a string as json.Unmarshal does.
func (s *itemScanner) str() string {
	if s.bad {
		return ""
	}
	v, n, ok := jsonfast.ReadString(s.b[s.i:])
	if !ok {
		s.bad = true
		return ""
	}
	s.i += n
	return v
}

// int reads an integer of the given bit size.
func (s *itemScanner) int(bits int) int64 {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	// JSON allows no leading zeros; encoding/json reads floats, which
	// this leaves to it.
	if s.i == digits || (s.b[digits] == '0' && s.i-digits > 1) {
		s.bad = true
		return 0
	}
	v, err := strconv.ParseInt(string(s.b[start:s.i]), 10, bits)
	if err != nil {
		s.bad = true
	}
	return v
}

// appendNamesJSON opens an item's or an update's object with the fields
// they share: id, then title, link and GUID when set.
func appendNamesJSON(dst []byte, id, title, link, guid string) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonfast.AppendStringHTML(dst, id)
	if title != "" {
		dst = append(dst, `,"ti":`...)
		dst = jsonfast.AppendStringHTML(dst, title)
	}
	if link != "" {
		dst = append(dst, `,"l":`...)
		dst = jsonfast.AppendStringHTML(dst, link)
	}
	if guid != "" {
		dst = append(dst, `,"g":`...)
		dst = jsonfast.AppendStringHTML(dst, guid)
	}
	return dst
}
