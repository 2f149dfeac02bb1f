package sandbox

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/feedworker/feedworker/internal/jsonfast"
)

// appendEntry appends the JSON of a journal entry to dst: the document
// json.Marshal makes of a journalEntry (same keys, same order; without
// its HTML-safe escapes of <, > and &, which JSON does not need), written
// directly. Marshalling every field of a record, then the entry again
// with its maps sorted, was most of the cost of a write's journal line.
// Values of the types decodeValue returns are written here; any other
// falls back to json.Marshal.
func appendEntry(dst []byte, st *state) ([]byte, error) {
	dst = append(dst, `{"next_id":{`...)
	for i, seq := range sortedKeys(st.next) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonfast.AppendString(dst, seq)
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, st.next[seq], 10)
	}
	dst = append(dst, '}')
	var puts, dels []ref
	for r := range st.dirty {
		if st.colls[r.coll][r.id] == nil {
			dels = append(dels, r)
		} else {
			puts = append(puts, r)
		}
	}
	if len(puts) > 0 {
		dst = append(dst, `,"put":[`...)
		for i, r := range puts {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendRecord(dst, r.coll, st.colls[r.coll][r.id]); err != nil {
				return nil, err
			}
		}
		dst = append(dst, ']')
	}
	if len(dels) > 0 {
		dst = append(dst, `,"del":[`...)
		for i, r := range dels {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"coll":`...)
			dst = jsonfast.AppendString(dst, r.coll)
			dst = append(dst, `,"id":`...)
			dst = strconv.AppendInt(dst, r.id, 10)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if st.tokensDirty {
		// Rare (a token issued), so the general encoder will do.
		toks := []diskToken{}
		for _, h := range sortedKeys(st.tokens) {
			toks = append(toks, diskToken{SHA256: h, Expires: st.tokens[h]})
		}
		b, err := json.Marshal(toks)
		if err != nil {
			return nil, fmt.Errorf("encode journal tokens: %w", err)
		}
		dst = append(dst, `,"tokens":`...)
		dst = append(dst, b...)
	}
	return append(dst, '}'), nil
}

// appendRecord appends a journalRecord: the collection, then diskRecord's
// fields.
func appendRecord(dst []byte, coll string, r *record) ([]byte, error) {
	dst = append(dst, `{"coll":`...)
	dst = jsonfast.AppendString(dst, coll)
	dst = append(dst, `,"id":`...)
	dst = strconv.AppendInt(dst, r.ID, 10)
	if r.Type != "" {
		dst = append(dst, `,"type":`...)
		dst = jsonfast.AppendString(dst, r.Type)
	}
	dst = append(dst, `,"date_modified_utc":`...)
	dst = jsonfast.AppendString(dst, r.Modified)
	dst = append(dst, `,"fields":{`...)
	keys := make([]string, 0, 16)
	for k := range r.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonfast.AppendString(dst, k)
		dst = append(dst, ':')
		var err error
		if dst, err = appendValue(dst, r.Fields[k]); err != nil {
			return nil, fmt.Errorf("encode %s %d field %s: %w", coll, r.ID, k, err)
		}
	}
	return append(dst, "}}"...), nil
}

func appendValue(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		return jsonfast.AppendString(dst, v), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case []int64:
		return jsonfast.AppendInt64s(dst, v), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}
