package sandbox

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// answer is a successful endpoint's status and body; a nil body is sent as
// no body (204).
type answer struct {
	status int
	body   any
}

// endpoint handles one method of one route; ids are the path's {id}s.
type endpoint func(r *http.Request, ids []int64) (answer, *apiError)

// route is a path below /v3/, split at "/"; the segment "{id}" matches a
// positive decimal integer only, so /v3/story/template is never an id.
type route struct {
	segs    []string
	methods map[string]endpoint
	list    bool // its GET is a list and takes page, page_size and filters_json
}

const (
	get  = http.MethodGet
	post = http.MethodPost
	put  = http.MethodPut
	del  = http.MethodDelete
)

// newRoutes lists every method and path of spec section 4 and the template
// endpoints.
func (s *Server) newRoutes() []route {
	rt := func(path string, list bool, m map[string]endpoint) route {
		return route{segs: strings.Split(path, "/"), methods: m, list: list}
	}
	routes := []route{
		// 4.2 Subscribers and related lists
		rt("subscriber", true, map[string]endpoint{get: s.list(collSubscriber), post: s.create(collSubscriber, "")}),
		rt("subscriber/{id}", false, map[string]endpoint{get: s.getOne(collSubscriber, ""), put: s.update(collSubscriber, "")}),
		rt("subscriber/{id}/unsubscribe", false, map[string]endpoint{post: s.unsubscribe}),
		rt("subscriber/{id}/subscriber_interest", true, map[string]endpoint{get: s.interest}),
		rt("subscriber_privacy_level", true, map[string]endpoint{get: s.reference(privacyLevels())}),
		rt("subscriber_status", true, map[string]endpoint{get: s.reference(subscriberStatuses())}),
		rt("subscriber_departure_code", true, map[string]endpoint{get: s.reference(departureCodes())}),
		rt("unsubscribe", true, map[string]endpoint{get: s.list(collUnsubscribe)}),
		rt("unsubscribe/{id}", false, map[string]endpoint{get: s.getOne(collUnsubscribe, "")}),
		// 4.3 Content: read through /content, written through the type paths.
		rt("content", true, map[string]endpoint{get: s.list(collContent)}),
		rt("content/{id}", false, map[string]endpoint{get: s.getOne(collContent, "")}),
	}
	for _, typ := range contentTypes() {
		routes = append(routes,
			rt(typ, false, map[string]endpoint{post: s.create(collContent, typ)}),
			rt(typ+"/{id}", false, map[string]endpoint{put: s.update(collContent, typ), del: s.remove(collContent, typ)}),
		)
	}
	routes = append(routes,
		// 4.4 Segments
		rt("segment", true, map[string]endpoint{get: s.list(collSegment), post: s.create(collSegment, "")}),
		rt("segment/{id}", false, map[string]endpoint{get: s.getOne(collSegment, ""), put: s.update(collSegment, ""), del: s.remove(collSegment, "")}),
		rt("segment/{id}/subscriber", true, map[string]endpoint{get: s.members, post: s.addMember}),
		rt("segment/{id}/subscriber/{id}", false, map[string]endpoint{del: s.removeMember}),
		// 4.5 Categories
		rt("category", true, map[string]endpoint{get: s.list(collCategory), post: s.create(collCategory, "")}),
		rt("category/{id}", false, map[string]endpoint{get: s.getOne(collCategory, ""), del: s.remove(collCategory, "")}),
		// 4.6 Blasts
		rt("blast", true, map[string]endpoint{get: s.list(collBlast), post: s.create(collBlast, "")}),
		rt("blast/{id}", false, map[string]endpoint{get: s.getOne(collBlast, ""), put: s.update(collBlast, ""), del: s.remove(collBlast, "")}),
		rt("blast_status", true, map[string]endpoint{get: s.reference(blastStatuses())}),
		// 4.7 Insights
		rt("content_insights", true, map[string]endpoint{get: s.contentInsights}),
		rt("subscriber_insights", true, map[string]endpoint{get: s.subscriberInsights}),
	)
	for _, t := range templateTypes() {
		routes = append(routes, rt(t+"/template", false, map[string]endpoint{get: s.template(t)}))
	}
	return routes
}

// match finds the route of a /v3 path and the ids in it.
func (s *Server) match(path string) (*route, []int64) {
	parts := strings.Split(strings.TrimPrefix(path, "/v3/"), "/")
	for i := range s.routes {
		rt := &s.routes[i]
		if len(rt.segs) != len(parts) {
			continue
		}
		var ids []int64
		ok := true
		for j, seg := range rt.segs {
			if seg != "{id}" {
				ok = seg == parts[j]
			} else {
				var id int64
				id, ok = parseID(parts[j])
				ids = append(ids, id)
			}
			if !ok {
				break
			}
		}
		if ok {
			return rt, ids
		}
	}
	return nil, nil
}

// parseID accepts decimal digits only (spec 4: {id} is an integer).
func parseID(s string) (int64, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// serveAPI answers a /v3 request: faults first (they stand for the network
// and the service's front, which fail before authentication), then the
// bearer token, the route, the query and the endpoint.
func (s *Server) serveAPI(w *statusWriter, r *http.Request) {
	v := s.faults.decide(s.now())
	if v.latency > 0 {
		t := time.NewTimer(v.latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			writeError(w, &apiError{Status: http.StatusServiceUnavailable, Message: "request cancelled during injected latency"})
			return
		}
	}
	if v.retryAfter > 0 {
		w.fault = "rate_limit"
		w.Header().Set("Retry-After", strconv.Itoa(v.retryAfter))
		writeError(w, &apiError{Status: http.StatusTooManyRequests, Message: "too many requests (sandbox fault rate_limit)"})
		return
	}
	if v.errorCode > 0 {
		w.fault = "error"
		writeError(w, &apiError{Status: v.errorCode, Message: http.StatusText(v.errorCode) + " (sandbox fault error_rate)"})
		return
	}
	if aerr, challenge := s.authorize(r); aerr != nil {
		w.Header().Set("WWW-Authenticate", challenge)
		writeError(w, aerr)
		return
	}
	rt, ids := s.match(r.URL.Path)
	if rt == nil {
		writeError(w, notFound("no such path %s", r.URL.Path))
		return
	}
	ep, ok := rt.methods[r.Method]
	if !ok {
		methodNotAllowed(w, slices.Sorted(maps.Keys(rt.methods))...)
		return
	}
	if r.URL.RawQuery != "" && (!rt.list || r.Method != get) {
		q, _ := url.ParseQuery(r.URL.RawQuery)
		name := ""
		if keys := sortedKeys(q); len(keys) > 0 {
			name = keys[0]
		}
		writeError(w, invalid(name, "%s %s takes no query parameters", r.Method, r.URL.Path))
		return
	}
	ans, aerr := ep(r, ids)
	if aerr == nil && r.Method != get {
		// Writes answered together share one append and sync.
		if err := s.syncWrites(); err != nil {
			aerr = saveFailed(s, err)
		}
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if r.Method != get && s.faults.commitFails() {
		w.fault = "commit_then_fail"
		writeError(w, &apiError{Status: http.StatusInternalServerError, Message: "internal error after the write was applied (sandbox fault commit_then_fail)"})
		return
	}
	if ans.body == nil {
		w.WriteHeader(ans.status)
		return
	}
	if s.opts.Style == StyleLoose {
		body, err := loosen(ans.body)
		if err != nil {
			// Everything answered is built from validated values; this is a bug.
			writeError(w, &apiError{Status: http.StatusInternalServerError, Message: "loosen answer: " + err.Error()})
			return
		}
		ans.body = body
	}
	writeJSON(w, ans.status, ans.body)
}

// baseURL is the root the client used, for self links, with the prefix
// of a Mount.
func baseURL(r *http.Request) string {
	if r.Host == "" {
		return mountPrefix(r)
	}
	if r.TLS != nil {
		return "https://" + r.Host + mountPrefix(r)
	}
	return "http://" + r.Host + mountPrefix(r)
}

func link(base, target string, id int64) string {
	return base + "/v3/" + target + "/" + strconv.FormatInt(id, 10)
}

func data(v any) map[string]any { return map[string]any{"data": v} }

// render shows a record as the API answers it: refs get self links, id
// objects are {id}, absent fields are left out.
func (s *Server) render(sc *schema, r *record, base string) map[string]any {
	out := make(map[string]any, len(sc.fields))
	for i := range sc.fields {
		f := &sc.fields[i]
		if f.name == "self" {
			out["self"] = link(base, f.target, r.ID)
			continue
		}
		v, ok := r.get(f.name)
		if !ok {
			continue
		}
		switch f.kind {
		case kindRef:
			out[f.name] = refOut(base, f.target, v.(int64))
		case kindRefs:
			ids := v.([]int64)
			refs := make([]map[string]any, len(ids))
			for j, id := range ids {
				refs[j] = refOut(base, f.target, id)
			}
			out[f.name] = refs
		case kindIDObject:
			out[f.name] = idObject{ID: v.(int64)}
		case kindIDObjects:
			ids := v.([]int64)
			objs := make([]idObject, len(ids))
			for j, id := range ids {
				objs[j] = idObject{ID: id}
			}
			out[f.name] = objs
		default:
			out[f.name] = v
		}
	}
	return out
}

// refOut is a ref with its self link. Targets the spec gives no endpoint
// (author, priority, content_status, time_zone) still get a link of the
// same shape, since the spec's ref always has self.
func refOut(base, target string, id int64) map[string]any {
	return map[string]any{"id": id, "self": link(base, target, id)}
}

func (s *Server) renderAll(sc *schema, recs []*record, base string) []map[string]any {
	out := make([]map[string]any, len(recs))
	for i, r := range recs {
		out[i] = s.render(sc, r, base)
	}
	return out
}

// readSchema is the schema a collection is answered with.
func (s *Server) readSchema(coll string) *schema { return s.schemas[coll] }

// writeSchema is the schema a write is validated with: a content type's own.
func (s *Server) writeSchema(coll, typ string) *schema { return s.schemas[cmp.Or(typ, coll)] }

func (s *Server) stamp() string { return formatTimestamp(s.now()) }

// commitLocked journals a change that is already applied in memory; it is
// on disk before the answer goes (see syncWrites in serveAPI). A failed
// save is a 500, like a database that fails after the commit.
func (s *Server) commitLocked() *apiError {
	if err := s.entryLocked(); err != nil {
		return saveFailed(s, err)
	}
	return nil
}

func saveFailed(s *Server, err error) *apiError {
	s.log.Error("sandbox: save state", "err", err)
	return &apiError{Status: http.StatusInternalServerError, Message: "the change is applied but could not be saved to the data file"}
}

// findLocked returns a stored record or the 404. For content written through
// a type path, the item must be of that type.
func (s *Server) findLocked(coll, typ string, id int64) (*record, *apiError) {
	r := s.st.colls[coll][id]
	if r == nil {
		what := cmp.Or(typ, coll)
		if coll == collSubscriber {
			if _, gone := s.st.colls[collUnsubscribe][id]; gone {
				return nil, notFound("no subscriber with id %d: it unsubscribed (see /v3/unsubscribe/%d)", id, id)
			}
		}
		return nil, notFound("no %s with id %d", what, id)
	}
	if typ != "" && r.Type != typ {
		return nil, notFound("no %s with id %d: content %d is a %s", typ, id, id, r.Type)
	}
	return r, nil
}

// checkExistsLocked refuses references to categories and segments that do
// not exist.
func (s *Server) checkExistsLocked(sc *schema, set map[string]any) *apiError {
	for _, f := range sc.fields {
		v, ok := set[f.name]
		if !f.mustExist || !ok {
			continue
		}
		for i, id := range v.([]int64) {
			if s.st.colls[f.target][id] == nil {
				p := fmt.Sprintf("%s[%d].id", f.name, i)
				return invalid(p, "%s: %s %d does not exist", p, f.target, id)
			}
		}
	}
	return nil
}

// scrubLocked removes every reference to a deleted segment or category, so
// that no stored ref dangles; the records it changes are modified.
func (s *Server) scrubLocked(target string, id int64) {
	now := s.stamp()
	for _, c := range collections() {
		sc := storageSchema(s.schemas, c)
		for _, f := range sc.fields {
			if f.target != target || (f.kind != kindRefs && f.kind != kindIDObjects) {
				continue
			}
			for _, r := range s.st.colls[c] {
				ids, _ := r.Fields[f.name].([]int64)
				if !slices.Contains(ids, id) {
					continue
				}
				fields := maps.Clone(r.Fields)
				fields[f.name] = slices.DeleteFunc(slices.Clone(ids), func(x int64) bool { return x == id })
				r.Fields, r.Modified = fields, now
				s.st.touch(c, r.ID)
			}
		}
	}
}

func (s *Server) create(coll, typ string) endpoint {
	sc := s.writeSchema(coll, typ)
	return func(r *http.Request, _ []int64) (answer, *apiError) {
		obj, _, aerr := readEnvelope(r, false)
		if aerr != nil {
			return answer{}, aerr
		}
		set, _, aerr := sc.parse(obj, opCreate)
		if aerr != nil {
			return answer{}, aerr
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if aerr := s.checkExistsLocked(sc, set); aerr != nil {
			return answer{}, aerr
		}
		if coll == collSubscriber {
			set["segments"] = []int64{}
		}
		rec := &record{ID: s.st.newID(coll), Type: typ, Modified: s.stamp(), Fields: set}
		s.st.colls[coll][rec.ID] = rec
		s.st.touch(coll, rec.ID)
		if aerr := s.commitLocked(); aerr != nil {
			return answer{}, aerr
		}
		return answer{http.StatusCreated, data(s.render(s.readSchema(coll), rec, baseURL(r)))}, nil
	}
}

// update merges the body into the stored record: fields sent replace, fields
// sent as null are cleared, fields not sent are kept. Content bodies must
// carry the id (spec 2.7); others may, and then it must match too.
func (s *Server) update(coll, typ string) endpoint {
	sc := s.writeSchema(coll, typ)
	idRequired := coll == collContent
	return func(r *http.Request, ids []int64) (answer, *apiError) {
		id := ids[0]
		var set map[string]any
		var clear []string
		obj, _, aerr := readEnvelope(r, false)
		if aerr == nil {
			set, clear, aerr = parseUpdate(sc, obj, id, idRequired)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		// An unknown id is a 404 whatever the body.
		rec, nf := s.findLocked(coll, typ, id)
		if nf != nil {
			return answer{}, nf
		}
		if aerr != nil {
			return answer{}, aerr
		}
		if aerr := s.checkExistsLocked(sc, set); aerr != nil {
			return answer{}, aerr
		}
		fields := maps.Clone(rec.Fields)
		maps.Copy(fields, set)
		for _, k := range clear {
			delete(fields, k)
		}
		rec.Fields, rec.Modified = fields, s.stamp()
		s.st.touch(coll, rec.ID)
		if aerr := s.commitLocked(); aerr != nil {
			return answer{}, aerr
		}
		return answer{http.StatusOK, data(s.render(s.readSchema(coll), rec, baseURL(r)))}, nil
	}
}

func parseUpdate(sc *schema, obj map[string]any, pathID int64, idRequired bool) (map[string]any, []string, *apiError) {
	raw, ok := obj["id"]
	switch {
	case !ok && idRequired:
		return nil, nil, invalid("id", "id is required on update and must equal the path id %d", pathID)
	case ok:
		n, isInt := asInt(raw)
		if !isInt {
			return nil, nil, invalid("id", "id must be an integer, got %s", show(raw))
		}
		if n != pathID {
			return nil, nil, invalid("id", "id %d does not match the path id %d", n, pathID)
		}
	}
	rest := maps.Clone(obj)
	delete(rest, "id")
	return sc.parse(rest, opUpdate)
}

func (s *Server) getOne(coll, typ string) endpoint {
	return func(r *http.Request, ids []int64) (answer, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		rec, aerr := s.findLocked(coll, typ, ids[0])
		if aerr != nil {
			return answer{}, aerr
		}
		return answer{http.StatusOK, data(s.render(s.readSchema(coll), rec, baseURL(r)))}, nil
	}
}

// remove deletes a record. Deleting a Segment keeps its Subscribers (spec
// 2.5): only their membership goes.
func (s *Server) remove(coll, typ string) endpoint {
	return func(r *http.Request, ids []int64) (answer, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		rec, aerr := s.findLocked(coll, typ, ids[0])
		if aerr != nil {
			return answer{}, aerr
		}
		delete(s.st.colls[coll], rec.ID)
		s.st.touch(coll, rec.ID)
		s.scrubLocked(coll, rec.ID)
		if aerr := s.commitLocked(); aerr != nil {
			return answer{}, aerr
		}
		return answer{status: http.StatusNoContent}, nil
	}
}

// listQuery parses the list parameters of r against sc.
func listQueryOf(r *http.Request, sc *schema) (listQuery, *apiError) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return listQuery{}, invalid("", "the query string does not parse: %v", err)
	}
	return parseList(q, sc)
}

func listAnswer(items []map[string]any, lq listQuery, total int) answer {
	return answer{http.StatusOK, map[string]any{"data": items, "page": lq.page, "page_size": lq.size, "total": total}}
}

func (s *Server) list(coll string) endpoint {
	sc := s.readSchema(coll)
	return func(r *http.Request, _ []int64) (answer, *apiError) {
		lq, aerr := listQueryOf(r, sc)
		if aerr != nil {
			return answer{}, aerr
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		page, total := lq.apply(s.st.candidates(coll, lq))
		return listAnswer(s.renderAll(sc, page, baseURL(r)), lq, total), nil
	}
}

func (s *Server) reference(items []refItem) endpoint {
	sc := s.schemas[schemaReference]
	recs := refRecords(items)
	return func(r *http.Request, _ []int64) (answer, *apiError) {
		lq, aerr := listQueryOf(r, sc)
		if aerr != nil {
			return answer{}, aerr
		}
		page, total := lq.apply(recs)
		return listAnswer(s.renderAll(sc, page, ""), lq, total), nil
	}
}

// unsubscribe turns a Subscriber into an Unsubscribe with the same id (spec
// 3.1): it leaves /v3/subscriber and its segments, keeps its name, e-mail
// and privacy level, takes the reserved status 1 and records the optional
// termination data.
func (s *Server) unsubscribe(r *http.Request, ids []int64) (answer, *apiError) {
	set := map[string]any{}
	obj, present, aerr := readEnvelope(r, true)
	if aerr == nil && present {
		set, _, aerr = s.schemas[collUnsubscribe].parse(obj, opCreate)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, nf := s.findLocked(collSubscriber, "", ids[0])
	if nf != nil {
		return answer{}, nf
	}
	if aerr != nil {
		return answer{}, aerr
	}
	fields := map[string]any{"subscriber_status": int64(1)}
	for _, k := range []string{"first_name", "last_name", "email", "subscriber_privacy_level"} {
		if v, ok := sub.Fields[k]; ok {
			fields[k] = v
		}
	}
	maps.Copy(fields, set)
	u := &record{ID: sub.ID, Modified: s.stamp(), Fields: fields}
	delete(s.st.colls[collSubscriber], sub.ID)
	s.st.colls[collUnsubscribe][u.ID] = u
	s.st.touch(collSubscriber, sub.ID)
	s.st.touch(collUnsubscribe, u.ID)
	if aerr := s.commitLocked(); aerr != nil {
		return answer{}, aerr
	}
	return answer{http.StatusOK, data(s.render(s.readSchema(collUnsubscribe), u, baseURL(r)))}, nil
}

func memberOf(sub *record) []int64 {
	ids, _ := sub.Fields["segments"].([]int64)
	return ids
}

func (s *Server) members(r *http.Request, ids []int64) (answer, *apiError) {
	sc := s.readSchema(collSubscriber)
	lq, aerr := listQueryOf(r, sc)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, nf := s.findLocked(collSegment, "", ids[0]); nf != nil {
		return answer{}, nf
	}
	if aerr != nil {
		return answer{}, aerr
	}
	var in []*record
	for _, sub := range s.st.sorted(collSubscriber) {
		if slices.Contains(memberOf(sub), ids[0]) {
			in = append(in, sub)
		}
	}
	page, total := lq.apply(in)
	return listAnswer(s.renderAll(sc, page, baseURL(r)), lq, total), nil
}

// addMember adds the one Subscriber of the body to the Segment (spec 4.4:
// one per request) and answers the Subscriber, which now references it.
func (s *Server) addMember(r *http.Request, ids []int64) (answer, *apiError) {
	segID := ids[0]
	var subID int64
	obj, _, aerr := readEnvelope(r, false)
	if aerr == nil {
		subID, aerr = memberBody(obj)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seg, nf := s.findLocked(collSegment, "", segID)
	if nf != nil {
		return answer{}, nf
	}
	if aerr != nil {
		return answer{}, aerr
	}
	sub := s.st.colls[collSubscriber][subID]
	if sub == nil {
		if s.st.colls[collUnsubscribe][subID] != nil {
			return answer{}, invalid("id", "subscriber %d has unsubscribed", subID)
		}
		return answer{}, invalid("id", "subscriber %d does not exist", subID)
	}
	if segs := memberOf(sub); !slices.Contains(segs, segID) {
		now := s.stamp()
		fields := maps.Clone(sub.Fields)
		segs = append(slices.Clone(segs), segID)
		slices.Sort(segs)
		fields["segments"] = segs
		sub.Fields, sub.Modified, seg.Modified = fields, now, now
		s.st.touch(collSubscriber, sub.ID)
		s.st.touch(collSegment, seg.ID)
		if aerr := s.commitLocked(); aerr != nil {
			return answer{}, aerr
		}
	}
	return answer{http.StatusOK, data(s.render(s.readSchema(collSubscriber), sub, baseURL(r)))}, nil
}

// memberBody reads the data object {id: <subscriber id>}.
func memberBody(obj map[string]any) (int64, *apiError) {
	for _, k := range sortedKeys(obj) {
		if k != "id" {
			return 0, invalid(k, "unknown field %s; the data object is {id: <subscriber id>}", k)
		}
	}
	raw, ok := obj["id"]
	if !ok {
		return 0, invalid("id", "id, the subscriber to add, is required")
	}
	id, ok := asInt(raw)
	if !ok || id <= 0 {
		return 0, invalid("id", "id must be a positive integer, got %s", show(raw))
	}
	return id, nil
}

func (s *Server) removeMember(r *http.Request, ids []int64) (answer, *apiError) {
	segID, subID := ids[0], ids[1]
	s.mu.Lock()
	defer s.mu.Unlock()
	seg, nf := s.findLocked(collSegment, "", segID)
	if nf != nil {
		return answer{}, nf
	}
	sub, nf := s.findLocked(collSubscriber, "", subID)
	if nf != nil {
		return answer{}, nf
	}
	segs := memberOf(sub)
	if !slices.Contains(segs, segID) {
		return answer{}, notFound("subscriber %d is not in segment %d", subID, segID)
	}
	now := s.stamp()
	fields := maps.Clone(sub.Fields)
	fields["segments"] = slices.DeleteFunc(slices.Clone(segs), func(x int64) bool { return x == segID })
	sub.Fields, sub.Modified, seg.Modified = fields, now, now
	s.st.touch(collSubscriber, sub.ID)
	s.st.touch(collSegment, seg.ID)
	if aerr := s.commitLocked(); aerr != nil {
		return answer{}, aerr
	}
	return answer{status: http.StatusNoContent}, nil
}

// interest ranks the Categories of the content a Subscriber can see: the
// sandbox records no reading, so the content offered stands for interest.
// Content exclusive to segments is seen only by their members. Score is the
// number of such items in the Category; the highest comes first.
func (s *Server) interest(r *http.Request, ids []int64) (answer, *apiError) {
	sc := s.schemas[schemaInterest]
	lq, aerr := listQueryOf(r, sc)
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, nf := s.findLocked(collSubscriber, "", ids[0])
	if nf != nil {
		return answer{}, nf
	}
	if aerr != nil {
		return answer{}, aerr
	}
	member := memberOf(sub)
	scores := map[int64]int64{}
	for _, c := range s.st.colls[collContent] {
		if exclusive, _ := c.Fields["exclusive_to_segment"].(bool); exclusive {
			segs, _ := c.Fields["segments"].([]int64)
			if !slices.ContainsFunc(segs, func(id int64) bool { return slices.Contains(member, id) }) {
				continue
			}
		}
		cats, _ := c.Fields["categories"].([]int64)
		for _, id := range cats {
			scores[id]++
		}
	}
	recs := make([]*record, 0, len(scores))
	for id, n := range scores {
		if cat := s.st.colls[collCategory][id]; cat != nil {
			recs = append(recs, &record{ID: id, Fields: map[string]any{"description": cat.Fields["description"], "score": n}})
		}
	}
	slices.SortFunc(recs, func(a, b *record) int {
		return cmp.Or(cmp.Compare(b.Fields["score"].(int64), a.Fields["score"].(int64)), cmp.Compare(a.ID, b.ID))
	})
	page, total := lq.apply(recs)
	return listAnswer(s.renderAll(sc, page, baseURL(r)), lq, total), nil
}

// contentInsights answers one engagement record per piece of Content. The
// sandbox has no readers, so every count is zero.
func (s *Server) contentInsights(r *http.Request, _ []int64) (answer, *apiError) {
	sc := s.schemas["content_insights"]
	lq, aerr := listQueryOf(r, sc)
	if aerr != nil {
		return answer{}, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var recs []*record
	for _, c := range s.st.sorted(collContent) {
		recs = append(recs, &record{ID: c.ID, Type: c.Type, Fields: zeroCounts(sc, "content_id", c.ID)})
	}
	page, total := lq.apply(recs)
	return listAnswer(s.renderAll(sc, page, ""), lq, total), nil
}

// subscriberInsights answers one engagement record per Subscriber, with
// zero counts like contentInsights.
func (s *Server) subscriberInsights(r *http.Request, _ []int64) (answer, *apiError) {
	sc := s.schemas["subscriber_insights"]
	lq, aerr := listQueryOf(r, sc)
	if aerr != nil {
		return answer{}, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var recs []*record
	for _, sub := range s.st.sorted(collSubscriber) {
		f := zeroCounts(sc, "subscriber_id", sub.ID)
		f["email"] = sub.Fields["email"]
		recs = append(recs, &record{ID: sub.ID, Fields: f})
	}
	page, total := lq.apply(recs)
	return listAnswer(s.renderAll(sc, page, ""), lq, total), nil
}

// zeroCounts is an insight record's fields: the id field, and 0 for every
// other integer field of sc.
func zeroCounts(sc *schema, idField string, id int64) map[string]any {
	f := map[string]any{idField: id}
	for _, fl := range sc.fields {
		if fl.kind == kindInteger && fl.name != idField {
			f[fl.name] = int64(0)
		}
	}
	return f
}

// templateField is one field as the template endpoint describes it. The
// last three keys go beyond the wire conventions' example, for clients and
// people who want to know in which requests a field may appear.
type templateField struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Searchable bool   `json:"searchable"`
	Required   bool   `json:"required"`
	ReadOnly   bool   `json:"read_only,omitempty"`
	CreateOnly bool   `json:"create_only,omitempty"`
	UpdateOnly bool   `json:"update_only,omitempty"`
}

func (s *Server) template(typ string) endpoint {
	sc := s.schemas[typ]
	fields := make([]templateField, len(sc.fields))
	for i, f := range sc.fields {
		fields[i] = templateField{
			Name: f.name, Type: f.kind.String(), Searchable: f.searchable, Required: f.required,
			ReadOnly: f.access == accessRead, CreateOnly: f.access == accessCreate, UpdateOnly: f.access == accessUpdate,
		}
	}
	body := data(map[string]any{"type": typ, "fields": fields})
	if s.opts.Style == StyleLoose {
		body = looseTemplate(typ, sc)
	}
	return func(*http.Request, []int64) (answer, *apiError) {
		return answer{http.StatusOK, body}, nil
	}
}
