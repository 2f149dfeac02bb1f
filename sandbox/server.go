package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/feedworker/feedworker/internal/graceful"
)

// Server is the sandbox: an http.Handler serving the whole API v3, the token
// endpoint and the control endpoint, plus methods for tests to read and
// reset its state. It is safe for concurrent use.
type Server struct {
	opts    Options
	log     *slog.Logger
	now     func() time.Time
	schemas map[string]*schema
	routes  []route
	faults  *faultState

	mu sync.Mutex // guards st and the data file
	st *state
	jr *journal // nil without a data file
	// entryBuf is where entryLocked encodes a journal entry, reused
	// across writes; guarded by mu.
	entryBuf []byte

	reqMu    sync.Mutex // guards the request log, apart from mu so that logging never waits on disk
	requests []Request  // ring buffer of at most opts.RequestLogSize
	reqStart int
}

// Request is one entry of the request log.
type Request struct {
	Method string
	Path   string // without the query string
	Status int
	// Fault names the injected fault that decided the answer: "error",
	// "rate_limit" or "commit_then_fail"; empty when none did.
	Fault string
}

// New returns a sandbox configured by opts. With opts.DataFile it loads the
// state from that file, or creates the file if it does not exist, so that a
// path that cannot be written fails here rather than on the first write.
func New(opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	opts.Faults.ErrorCodes = slices.Clone(opts.Faults.ErrorCodes)
	s := &Server{
		opts:    opts,
		log:     opts.Logger,
		now:     opts.Now,
		schemas: newSchemas(opts.ReplyToDomain),
		faults:  newFaultState(opts.Faults),
		st:      newState(),
	}
	if err := unsearch(s.schemas, opts.NotSearchable); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	s.routes = s.newRoutes()
	if opts.DataFile != "" {
		st, existed, journaled, err := loadState(opts.DataFile, s.schemas, s.now())
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		s.st = st
		s.jr = &journal{path: opts.DataFile, compactMin: compactMin}
		// A new file is created now; a journal left by the last run
		// (and a torn line a kill -9 may have cut) is folded into a
		// fresh snapshot.
		if !existed || journaled {
			if err := s.snapshotLocked(); err != nil {
				return nil, fmt.Errorf("sandbox: %w", err)
			}
		} else if fi, err := os.Stat(opts.DataFile); err == nil {
			s.jr.snapshot = fi.Size()
		}
	}
	return s, nil
}

// shutdownGrace bounds how long Serve waits for requests in flight.
const shutdownGrace = 5 * time.Second

// ListenAndServe listens on addr (host:port; port 0 picks one) and serves
// until ctx is done. See [Server.Serve].
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("sandbox: listen: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx is done, then shuts down gracefully and
// returns nil. Requests in flight see their context cancelled, so injected
// latency does not hold the shutdown. It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.log.Info("sandbox listening", "addr", ln.Addr().String(), "token_url", "http://"+ln.Addr().String()+"/oauth/token",
		"data", s.opts.DataFile)
	if err := graceful.Serve(ctx, hs, ln, shutdownGrace); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	s.log.Info("sandbox stopped")
	return nil
}

// controlPrefix starts the paths of the control endpoint, outside /v3.
const controlPrefix = "/_sandbox/"

// ServeHTTP routes the token endpoint, the control endpoint and /v3.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	path := r.URL.Path
	control := strings.HasPrefix(path, controlPrefix)
	if !control {
		// Logged when the status is written, before the client can read
		// the answer, so that a test reading Requests after a response
		// always finds it.
		sw.onHeader = func(status int, fault string) {
			s.record(Request{Method: r.Method, Path: path, Status: status, Fault: fault})
		}
	}
	switch {
	case path == tokenPath:
		s.serveToken(sw, r)
	case path == "/v3" || strings.HasPrefix(path, "/v3/"):
		s.serveAPI(sw, r)
	case control:
		s.serveControl(sw, r)
	default:
		writeError(sw, notFound("no such path %s; the API is under /v3", path))
	}
	// Paths only: query strings may hold filters but never credentials, and
	// headers (the bearer token) and bodies are never logged.
	s.log.LogAttrs(r.Context(), slog.LevelDebug, "sandbox request",
		slog.String("method", r.Method), slog.String("path", path),
		slog.Int("status", sw.status), slog.String("fault", sw.fault),
		slog.Duration("duration", time.Since(start)))
}

// statusWriter remembers the status and reports it once, when written.
type statusWriter struct {
	http.ResponseWriter
	status   int
	fault    string // set by serveAPI before it writes a faulted answer
	onHeader func(status int, fault string)
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		if w.onHeader != nil {
			w.onHeader(code, w.fault)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func writeJSON(w http.ResponseWriter, status int, v any) {
	// Content bodies are HTML: without HTML escaping an answer is shorter
	// and cheaper for the client to decode ("<p>", not "\u003cp\u003e"),
	// and means the same.
	b, err := appendAnswer(make([]byte, 0, 1024), v) // ends with a newline, as json.Encoder's
	if err != nil {
		// Everything written is built from validated values; this is a bug.
		http.Error(w, `{"error":{"status":500,"message":"encode answer"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b) // a client that left is not an error of ours
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.Status, map[string]*apiError{"error": e})
}

func (s *Server) record(req Request) {
	s.reqMu.Lock()
	defer s.reqMu.Unlock()
	limit := s.opts.RequestLogSize
	if len(s.requests) < limit {
		s.requests = append(s.requests, req)
		return
	}
	s.requests[s.reqStart] = req
	s.reqStart = (s.reqStart + 1) % limit
}

// Requests returns the request log, oldest first: every request except
// those to the control endpoint, at most Options.RequestLogSize of them.
func (s *Server) Requests() []Request {
	s.reqMu.Lock()
	defer s.reqMu.Unlock()
	out := make([]Request, 0, len(s.requests))
	out = append(out, s.requests[s.reqStart:]...)
	return append(out, s.requests[:s.reqStart]...)
}

// SetFaults replaces the injected faults; the zero Faults turns them off.
// The random sequence restarts from f.Seed.
func (s *Server) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	s.faults.set(f)
	s.log.Info("sandbox faults set", "latency", f.Latency, "error_rate", f.ErrorRate,
		"rate_limit", f.RateLimit, "commit_then_fail", f.CommitThenFail, "seed", f.Seed)
	return nil
}

// Faults returns the injected faults.
func (s *Server) Faults() Faults { return s.faults.get() }

// Item is one piece of content, as tests read it.
type Item struct {
	ID              int64
	Type            string // story, event, link or need
	ExternalID      string // empty when not set
	Title           string
	DateModifiedUTC string
	// JSON is the object GET /v3/content/{id} answers, with self links
	// relative to the server root (/v3/content/1).
	JSON json.RawMessage
}

func (s *Server) itemLocked(r *record) Item {
	b, err := json.Marshal(s.render(s.schemas[collContent], r, ""))
	if err != nil {
		panic(fmt.Sprintf("sandbox: encode content %d: %v", r.ID, err)) // stored values always encode
	}
	ext, _ := r.Fields["external_id"].(string)
	title, _ := r.Fields["title"].(string)
	return Item{ID: r.ID, Type: r.Type, ExternalID: ext, Title: title, DateModifiedUTC: r.Modified, JSON: b}
}

// ItemsByExternalID returns the content with external_id id, in id order.
// The sandbox does not make external_id unique, so a client that posts an
// item twice is seen here as two items.
func (s *Server) ItemsByExternalID(id string) []Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Item
	for _, r := range s.st.sorted(collContent) {
		if r.Fields["external_id"] == id {
			out = append(out, s.itemLocked(r))
		}
	}
	return out
}

// AllContent returns every piece of content, in id order.
func (s *Server) AllContent() []Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := s.st.sorted(collContent)
	out := make([]Item, 0, len(recs))
	for _, r := range recs {
		out = append(out, s.itemLocked(r))
	}
	return out
}

// Counts returns how many resources of each type are stored: story, event,
// link, need, subscriber, unsubscribe, segment, category and blast. Every
// key is present.
func (s *Server) Counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, t := range contentTypes() {
		out[t] = 0
	}
	for _, r := range s.st.colls[collContent] {
		out[r.Type]++
	}
	for _, c := range collections() {
		if c != collContent {
			out[c] = len(s.st.colls[c])
		}
	}
	return out
}

// Reset empties the sandbox: every resource, the id sequences (the next
// ids are 1 again) and the request log. Issued tokens stay valid and the
// faults stay set, so a client in a test can go on. With a data file the
// empty state is saved.
func (s *Server) Reset() error {
	s.mu.Lock()
	tokens := s.st.tokens
	s.st = newState()
	s.st.tokens = tokens
	err := s.snapshotLocked()
	s.mu.Unlock()
	s.reqMu.Lock()
	s.requests, s.reqStart = nil, 0
	s.reqMu.Unlock()
	if err != nil {
		return fmt.Errorf("sandbox: reset: %w", err)
	}
	return nil
}

// serveControl serves the control endpoint:
//
//	GET    /_sandbox/faults  the faults, {"data": {...}}
//	PUT    /_sandbox/faults  replace them with the JSON body (missing keys are zero)
//	DELETE /_sandbox/faults  turn them off
//	POST   /_sandbox/reset   see Reset
//
// It needs no token: it is for the person or test that runs the sandbox.
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case controlPrefix + "faults":
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, http.StatusOK, map[string]Faults{"data": s.Faults()})
		case http.MethodPut:
			b, aerr := readBody(r)
			if aerr != nil {
				writeError(w, aerr)
				return
			}
			var f Faults
			if err := json.Unmarshal(b, &f); err != nil {
				writeError(w, invalid("", "%v", err))
				return
			}
			if err := s.SetFaults(f); err != nil {
				writeError(w, invalid("", "%v", err))
				return
			}
			writeJSON(w, http.StatusOK, map[string]Faults{"data": s.Faults()})
		case http.MethodDelete:
			s.faults.set(Faults{})
			s.log.Info("sandbox faults cleared")
			w.WriteHeader(http.StatusNoContent)
		default:
			methodNotAllowed(w, http.MethodDelete, http.MethodGet, http.MethodPut)
		}
	case controlPrefix + "reset":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, http.MethodPost)
			return
		}
		if err := s.Reset(); err != nil {
			s.log.Error("sandbox reset", "err", err)
			writeError(w, &apiError{Status: http.StatusInternalServerError, Message: err.Error()})
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		writeError(w, notFound("no such control path %s; use %sfaults or %sreset", r.URL.Path, controlPrefix, controlPrefix))
	}
}

func methodNotAllowed(w http.ResponseWriter, allowed ...string) {
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Message: "method not allowed; allowed: " + strings.Join(allowed, ", ")})
}
