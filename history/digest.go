package history

import (
	"slices"
)

// Field is a group of an item's mapped fields that a Digest hashes.
type Field uint8

// The groups, in the order a Digest holds them.
const (
	FieldType Field = iota
	FieldTitle
	FieldSummary
	FieldBody
	FieldImage
	FieldLink
	FieldDates
	FieldCategories
	FieldSettings
	FieldEvent
	FieldNeed
	numFields
)

// String is the group's name, as stored and as Event.Fields names it.
func (f Field) String() string {
	switch f {
	case FieldType:
		return "type"
	case FieldTitle:
		return "title"
	case FieldSummary:
		return "summary"
	case FieldBody:
		return "body"
	case FieldImage:
		return "image"
	case FieldLink:
		return "link"
	case FieldDates:
		return "dates"
	case FieldCategories:
		return "categories"
	case FieldSettings:
		return "settings"
	case FieldEvent:
		return "event"
	case FieldNeed:
		return "need"
	}
	return "field?"
}

// jsonOrder is the fields in the order of their names, as json.Marshal
// writes the keys of a map: the JSON of an Update is what it was when the
// digest was a map[string]string.
func jsonOrder() [numFields]Field {
	return [numFields]Field{FieldBody, FieldCategories, FieldDates, FieldEvent, FieldImage, FieldLink,
		FieldNeed, FieldSettings, FieldSummary, FieldTitle, FieldType}
}

// Digest is a short hash (24 bits) per group of an item's mapped fields, so
// the history can name what changed in an update. It is held as numbers
// while it waits for a write (a pending record costs 48 bytes for it, not
// a map of eleven strings); the stores keep the form earlier versions
// wrote, a map of group name to six hex digits (Item.Digest), so their
// records and these compare alike. The zero Digest is none.
type Digest struct {
	sum [numFields]uint32
	set bool
}

// Set records the hash of group f; only its low 24 bits are kept. A
// Digest that is set holds every group (those never Set hash to 0), so
// the producer sets them all.
func (d *Digest) Set(f Field, sum uint32) {
	d.sum[f] = sum & 0xffffff
	d.set = true
}

// IsZero reports whether no group was set.
func (d Digest) IsZero() bool { return !d.set }

// Map is the stored form: group name → six lower-case hex digits; nil for
// the zero Digest.
func (d Digest) Map() map[string]string {
	if !d.set {
		return nil
	}
	m := make(map[string]string, numFields)
	for f := range numFields {
		m[f.String()] = string(appendHex6(nil, d.sum[f]))
	}
	return m
}

// MarshalJSON writes the stored form, with the keys in json.Marshal's
// order for a map.
func (d Digest) MarshalJSON() ([]byte, error) {
	if !d.set {
		return []byte("null"), nil
	}
	return d.appendJSON(make([]byte, 0, 16*numFields)), nil
}

// appendJSON appends the JSON of a set digest, as MarshalJSON writes it.
func (d Digest) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, f := range jsonOrder() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, f.String()...)
		b = append(b, `":"`...)
		b = appendHex6(b, d.sum[f])
		b = append(b, '"')
	}
	return append(b, '}')
}

// appendHex6 appends v as fmt's %06x writes a value below 1<<24.
func appendHex6(b []byte, v uint32) []byte {
	const digits = "0123456789abcdef"
	for shift := 20; shift >= 0; shift -= 4 {
		b = append(b, digits[v>>uint(shift)&0xf])
	}
	return b
}

// changedFields names the groups whose hash differs between a stored
// digest (old, as any version wrote it) and cur, and those old has that
// cur lacks, sorted: what the Redis script computes from the two maps.
func changedFields(old map[string]string, cur Digest) []string {
	var f []string
	var hex [6]byte
	for g := range numFields {
		name := g.String()
		if v, ok := old[name]; !ok || v != string(appendHex6(hex[:0], cur.sum[g])) {
			f = append(f, name)
		}
	}
	for k := range old {
		if !isField(k) {
			f = append(f, k)
		}
	}
	slices.Sort(f)
	return f
}

func isField(name string) bool {
	for g := range numFields {
		if g.String() == name {
			return true
		}
	}
	return false
}
