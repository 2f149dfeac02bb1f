package sandbox

import (
	"cmp"
	"slices"
)

// Lists filtered on external_id are how clients look up before they post
// (the worker's reconcile asks for up to 100 ids at a time), so a sandbox
// holding 100,000 contents answers them from an index instead of sorting
// and scanning the whole collection per request, which made a long run
// quadratic. The index maps a value to the ids that had it when they were
// touched: a superset, since a record that changed or lost its value keeps
// its old entry. Candidates are therefore read back from the collection
// and every condition is applied to them as to a full scan, so the answer
// is the same either way.

// indexedField is the one field the sandbox indexes.
const indexedField = "external_id"

// extIndex is the index of one collection: value → ids.
type extIndex map[string]map[int64]struct{}

// indexTouched records the current value of a touched record; touch calls
// it for every change made through the API.
func (st *state) indexTouched(coll string, id int64) {
	idx := st.index[coll]
	if idx == nil {
		return // built from the whole collection at its next use
	}
	if r := st.colls[coll][id]; r != nil {
		idx.add(r)
	}
}

func (idx extIndex) add(r *record) {
	v, ok := r.Fields[indexedField].(string)
	if !ok {
		return
	}
	ids := idx[v]
	if ids == nil {
		ids = map[int64]struct{}{}
		idx[v] = ids
	}
	ids[r.ID] = struct{}{}
}

// dropIndexes forgets every index; loading and replaying a journal change
// records without touch, so they call it.
func (st *state) dropIndexes() { st.index = nil }

// candidates returns, in id order, the records of coll that may satisfy
// lq: those the index holds for an eq or in condition on the indexed
// field, or, when lq has none, the whole collection.
func (st *state) candidates(coll string, lq listQuery) []*record {
	var values []any
	found := false
	for _, c := range lq.conds {
		if c.f.name != indexedField {
			continue
		}
		switch c.op {
		case opEq:
			values, found = []any{c.val}, true
		case opIn:
			values, found = c.set, true
		}
		if found {
			break
		}
	}
	if !found {
		return st.sorted(coll)
	}
	idx := st.indexOf(coll)
	seen := map[int64]bool{}
	var recs []*record
	for _, v := range values {
		s, ok := v.(string)
		if !ok {
			continue
		}
		for id := range idx[s] {
			if r := st.colls[coll][id]; r != nil && !seen[id] {
				seen[id] = true
				recs = append(recs, r)
			}
		}
	}
	slices.SortFunc(recs, func(a, b *record) int { return cmp.Compare(a.ID, b.ID) })
	return recs
}

// indexOf returns coll's index, building it from the collection if needed.
func (st *state) indexOf(coll string) extIndex {
	if st.index == nil {
		st.index = map[string]extIndex{}
	}
	idx := st.index[coll]
	if idx == nil {
		idx = extIndex{}
		for _, r := range st.colls[coll] {
			idx.add(r)
		}
		st.index[coll] = idx
	}
	return idx
}
