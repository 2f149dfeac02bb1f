package sandbox

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// record is one stored resource. Fields holds the values a client wrote,
// typed as decodeValue returns them; id, type and date_modified_utc are
// kept apart because the service, not the client, sets them.
type record struct {
	ID       int64
	Type     string // story, event, link or need for content; empty otherwise
	Modified string // date_modified_utc
	Fields   map[string]any
}

// get returns a field's value as filters compare it and render shows it.
func (r *record) get(name string) (any, bool) {
	switch name {
	case "id":
		return r.ID, true
	case "type":
		if r.Type != "" {
			return r.Type, true
		}
	case "date_modified_utc":
		return r.Modified, r.Modified != ""
	}
	v, ok := r.Fields[name]
	return v, ok
}

// collections returns every stored collection.
func collections() []string {
	return []string{collContent, collSubscriber, collUnsubscribe, collSegment, collCategory, collBlast}
}

// sequence is the id sequence of a collection: an Unsubscribe keeps the id
// it had as a Subscriber (spec 2.4), so the two share one.
func sequence(coll string) string {
	if coll == collUnsubscribe {
		return collSubscriber
	}
	return coll
}

// state is everything the sandbox keeps, guarded by Server.mu.
type state struct {
	next   map[string]int64 // next id per sequence; ids are never reused
	colls  map[string]map[int64]*record
	tokens map[string]time.Time // SHA-256 (hex) of an access token → expiry
	// dirty and tokensDirty say what changed since the last journal entry
	// (see journal.go).
	dirty       map[ref]bool
	tokensDirty bool
	// index holds the external_id index of a collection once a list used
	// it (index.go).
	index map[string]extIndex
}

func newState() *state {
	st := &state{next: map[string]int64{}, colls: map[string]map[int64]*record{}, tokens: map[string]time.Time{}}
	for _, c := range collections() {
		st.colls[c] = map[int64]*record{}
		st.next[sequence(c)] = 1
	}
	return st
}

func (st *state) newID(coll string) int64 {
	seq := sequence(coll)
	id := st.next[seq]
	st.next[seq]++
	return id
}

// sorted returns a collection in id order, the order of every list.
func (st *state) sorted(coll string) []*record {
	recs := make([]*record, 0, len(st.colls[coll]))
	for _, r := range st.colls[coll] {
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b *record) int { return cmp.Compare(a.ID, b.ID) })
	return recs
}

// The data file. Fields are stored with the types decodeValue returns, not
// as the API renders them: self links depend on the address a client used.
const stateFormat = 1

type diskState struct {
	Format  int                     `json:"format"`
	NextID  map[string]int64        `json:"next_id"`
	Records map[string][]diskRecord `json:"records"`
	// Tokens holds digests, never tokens, so the file is no credential and a
	// restarted sandbox still accepts the tokens it issued.
	Tokens []diskToken `json:"tokens"`
}

type diskRecord struct {
	ID       int64                      `json:"id"`
	Type     string                     `json:"type,omitempty"`
	Modified string                     `json:"date_modified_utc"`
	Fields   map[string]json.RawMessage `json:"fields"`
}

type diskToken struct {
	SHA256  string    `json:"sha256"`
	Expires time.Time `json:"expires"`
}

// storageSchema is the schema whose kinds type a collection's stored fields.
func storageSchema(schemas map[string]*schema, coll string) *schema {
	return schemas[coll] // collection names are also schema names
}

func encodeState(st *state) ([]byte, error) {
	ds := diskState{Format: stateFormat, NextID: st.next, Records: map[string][]diskRecord{}, Tokens: []diskToken{}}
	for _, c := range collections() {
		recs := []diskRecord{}
		for _, r := range st.sorted(c) {
			dr, err := encodeRecord(c, r)
			if err != nil {
				return nil, err
			}
			recs = append(recs, dr)
		}
		ds.Records[c] = recs
	}
	for _, h := range sortedKeys(st.tokens) {
		ds.Tokens = append(ds.Tokens, diskToken{SHA256: h, Expires: st.tokens[h]})
	}
	b, err := json.MarshalIndent(ds, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	return append(b, '\n'), nil
}

func encodeRecord(coll string, r *record) (diskRecord, error) {
	dr := diskRecord{ID: r.ID, Type: r.Type, Modified: r.Modified, Fields: make(map[string]json.RawMessage, len(r.Fields))}
	for k, v := range r.Fields {
		b, err := json.Marshal(v)
		if err != nil {
			return dr, fmt.Errorf("encode %s %d field %s: %w", coll, r.ID, k, err)
		}
		dr.Fields[k] = b
	}
	return dr, nil
}

// decodeRecord checks and decodes one stored record of collection c.
func decodeRecord(schemas map[string]*schema, c string, dr diskRecord, next map[string]int64) (*record, error) {
	if dr.ID < 1 || dr.ID >= next[sequence(c)] {
		return nil, fmt.Errorf("%s id %d: outside 1..next_id", c, dr.ID)
	}
	if (c == collContent) != slices.Contains(contentTypes(), dr.Type) {
		return nil, fmt.Errorf("%s id %d: type %q", c, dr.ID, dr.Type)
	}
	if dr.Modified != "" && !validTimestamp(dr.Modified) {
		return nil, fmt.Errorf("%s id %d: date_modified_utc %q", c, dr.ID, dr.Modified)
	}
	sc := storageSchema(schemas, c)
	r := &record{ID: dr.ID, Type: dr.Type, Modified: dr.Modified, Fields: make(map[string]any, len(dr.Fields))}
	for k, raw := range dr.Fields {
		f := sc.field(k)
		if f == nil {
			return nil, fmt.Errorf("%s id %d: unknown field %s", c, dr.ID, k)
		}
		v, err := decodeStored(f.kind, raw)
		if err != nil {
			return nil, fmt.Errorf("%s id %d field %s: %w", c, dr.ID, k, err)
		}
		r.Fields[k] = v
	}
	return r, nil
}

// decodeState reads a data file, checking it as strictly as requests: a
// file that does not decode is refused rather than overwritten.
func decodeState(b []byte, schemas map[string]*schema, now time.Time) (*state, error) {
	var ds diskState
	if err := json.Unmarshal(b, &ds); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if ds.Format != stateFormat {
		return nil, fmt.Errorf("format %d, want %d", ds.Format, stateFormat)
	}
	st := newState()
	for seq := range st.next {
		n, ok := ds.NextID[seq]
		if !ok || n < 1 {
			return nil, fmt.Errorf("next_id of %s: missing or below 1", seq)
		}
		st.next[seq] = n
	}
	for c, recs := range ds.Records {
		coll, ok := st.colls[c]
		if !ok {
			return nil, fmt.Errorf("unknown collection %q", c)
		}
		for _, dr := range recs {
			if _, dup := coll[dr.ID]; dup {
				return nil, fmt.Errorf("%s id %d: stored twice", c, dr.ID)
			}
			r, err := decodeRecord(schemas, c, dr, st.next)
			if err != nil {
				return nil, err
			}
			coll[dr.ID] = r
		}
	}
	if err := st.check(); err != nil {
		return nil, err
	}
	for _, t := range ds.Tokens {
		if t.Expires.After(now) {
			st.tokens[t.SHA256] = t.Expires
		}
	}
	return st, nil
}

// check is what must hold across collections.
func (st *state) check() error {
	for id := range st.colls[collUnsubscribe] {
		if _, both := st.colls[collSubscriber][id]; both {
			return fmt.Errorf("id %d is both a subscriber and an unsubscribe", id)
		}
	}
	return nil
}

func decodeStored(k kind, raw json.RawMessage) (any, error) {
	switch k {
	case kindString:
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case kindTimestamp:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		if !validTimestamp(s) {
			return nil, fmt.Errorf("timestamp %q", s)
		}
		return s, nil
	case kindInteger, kindRef, kindIDObject:
		var n int64
		err := json.Unmarshal(raw, &n)
		return n, err
	case kindBoolean:
		var b bool
		err := json.Unmarshal(raw, &b)
		return b, err
	case kindRefs, kindIDObjects:
		ids := []int64{}
		err := json.Unmarshal(raw, &ids)
		return ids, err
	case kindMergeFields:
		mf := []mergeField{}
		err := json.Unmarshal(raw, &mf)
		return mf, err
	}
	return nil, fmt.Errorf("no decoder for %s", k)
}

// loadState reads path, its snapshot then its journal (see journal.go); a
// missing file is an empty state. journaled reports a non-empty journal.
func loadState(path string, schemas map[string]*schema, now time.Time) (st *state, existed, journaled bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newState(), false, false, nil
	}
	if err != nil {
		return nil, false, false, fmt.Errorf("read data file: %w", err)
	}
	// The snapshot is the first JSON document; the journal follows it.
	dec := json.NewDecoder(bytes.NewReader(b))
	var snap json.RawMessage
	if err := dec.Decode(&snap); err != nil {
		return nil, true, false, fmt.Errorf("data file %s: decode: %w", path, err)
	}
	st, err = decodeState(snap, schemas, now)
	if err != nil {
		return nil, true, false, fmt.Errorf("data file %s: %w", path, err)
	}
	rest := b[dec.InputOffset():]
	if _, err := replayJournal(rest, st, schemas); err != nil {
		return nil, true, false, fmt.Errorf("data file %s: %w", path, err)
	}
	if err := st.check(); err != nil {
		return nil, true, false, fmt.Errorf("data file %s: after the journal: %w", path, err)
	}
	for h, exp := range st.tokens {
		if !exp.After(now) {
			delete(st.tokens, h)
		}
	}
	return st, true, len(bytes.TrimSpace(rest)) > 0, nil
}

// writeFileAtomic replaces path with data so that a crash leaves either the
// old file or the new one, never a torn one: write a temporary file in the
// same directory, sync it, rename it over path, then sync the directory so
// the rename itself is durable.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp) // the error already says what failed
		}
	}()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename into %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		// Some file systems cannot sync a directory; the rename is done.
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
