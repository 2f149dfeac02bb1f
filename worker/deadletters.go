package worker

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/feedworker/feedworker/publish"
)

// The embedded store's file is locked while the worker runs, so the
// deadletters command cannot open it then. These admin endpoints let it
// list and retry through the running worker instead. They are served only
// with the embedded store: with Redis the command opens Redis itself.
//
//	GET  /deadletters?store=PATH                 → DeadLettersAnswer
//	POST /deadletters/retry  (application/json)  RetryRequest → RetryAnswer
//
// PATH is the store file the caller's config names; a worker using another
// file answers 409, so a command never acts on a store it did not mean.
// POST wants a JSON body: a browser page elsewhere cannot send one without
// a CORS preflight, which this server never grants. With admin.token set,
// POST also wants it as a bearer token, like every other admin action.

// DeadLettersAnswer is the answer of GET /deadletters.
type DeadLettersAnswer struct {
	Store       string               `json:"store"`
	DeadLetters []publish.DeadLetter `json:"dead_letters"`
}

// RetryRequest is the body of POST /deadletters/retry: IDs, or All.
type RetryRequest struct {
	Store string   `json:"store"`
	IDs   []string `json:"ids,omitempty"`
	All   bool     `json:"all,omitempty"`
}

// RetryAnswer is the answer of POST /deadletters/retry. On an error, Queued
// counts the IDs queued before it.
type RetryAnswer struct {
	Queued int    `json:"queued"`
	Error  string `json:"error,omitempty"`
}

// deadLetterRoutes are the admin routes above, for Admin.Extra.
func (w *Worker) deadLetterRoutes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /deadletters":        http.HandlerFunc(w.serveDeadLetters),
		"POST /deadletters/retry": http.HandlerFunc(w.serveRetry),
	}
}

func (w *Worker) serveDeadLetters(rw http.ResponseWriter, r *http.Request) {
	if !w.sameStore(rw, r.URL.Query().Get("store")) {
		return
	}
	dls, err := w.pub.DeadLetters(r.Context())
	if err != nil {
		writeAdminJSON(rw, http.StatusServiceUnavailable, RetryAnswer{Error: err.Error()})
		return
	}
	writeAdminJSON(rw, http.StatusOK, DeadLettersAnswer{Store: w.config().Store.Path, DeadLetters: dls})
}

func (w *Worker) serveRetry(rw http.ResponseWriter, r *http.Request) {
	if token := w.config().Admin.Token; token != "" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.console.actions.WithLabelValues("retry", "refused").Inc()
			w.log.Warn("dead letters: retry refused", "remote", r.RemoteAddr, "cause", "no or wrong admin token")
			writeAdminJSON(rw, http.StatusUnauthorized, RetryAnswer{Error: errNoAuth.Error()})
			return
		}
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeAdminJSON(rw, http.StatusUnsupportedMediaType, RetryAnswer{Error: "want a JSON body (Content-Type: application/json)"})
		return
	}
	var req RetryRequest
	dec := json.NewDecoder(http.MaxBytesReader(rw, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeAdminJSON(rw, http.StatusBadRequest, RetryAnswer{Error: "read the request: " + err.Error()})
		return
	}
	if req.All == (len(req.IDs) > 0) {
		writeAdminJSON(rw, http.StatusBadRequest, RetryAnswer{Error: "give ids or all, not both or neither"})
		return
	}
	if !w.sameStore(rw, req.Store) {
		return
	}
	w.log.Info("dead letters queued again through the admin endpoint", "all", req.All, "ids", len(req.IDs))
	if req.All {
		n, err := w.pub.RetryDeadLetters(r.Context())
		if err != nil {
			writeAdminJSON(rw, http.StatusServiceUnavailable, RetryAnswer{Error: err.Error()})
			return
		}
		writeAdminJSON(rw, http.StatusOK, RetryAnswer{Queued: n})
		return
	}
	for i, id := range req.IDs {
		if err := w.pub.RetryDeadLetter(r.Context(), id); err != nil {
			status := http.StatusServiceUnavailable
			if errors.Is(err, publish.ErrNotFound) {
				status = http.StatusNotFound
			}
			writeAdminJSON(rw, status, RetryAnswer{Queued: i, Error: err.Error()})
			return
		}
	}
	writeAdminJSON(rw, http.StatusOK, RetryAnswer{Queued: len(req.IDs)})
}

// sameStore answers 409 unless path names this worker's store file.
func (w *Worker) sameStore(rw http.ResponseWriter, path string) bool {
	own := w.config().Store.Path
	if SameFile(own, path) {
		return true
	}
	writeAdminJSON(rw, http.StatusConflict, RetryAnswer{Error: fmt.Sprintf("this worker's store is %s, not %q", own, path)})
	return false
}

// SameFile reports whether a and b name the same existing file, as seen
// from this process's working directory.
func SameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(fa, fb)
}

// AbsStorePath is the store path a command sends to a running worker: the
// worker may run in another directory.
func AbsStorePath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func writeAdminJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(v)
}
