package sandbox

import (
	"context"
	"net/http"
	"strings"
)

// mountKey carries the path prefix the sandbox is mounted under.
type mountKey struct{}

// Mount returns the sandbox as a handler for requests under prefix (such as
// "/sandbox" on another server's mux): the prefix is stripped before
// routing and kept in the self links it answers, so they lead back through
// the mount.
func (s *Server) Mount(prefix string) http.Handler {
	prefix = strings.TrimSuffix(prefix, "/")
	return http.StripPrefix(prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), mountKey{}, prefix)))
	}))
}

// mountPrefix is the prefix given to Mount, or "".
func mountPrefix(r *http.Request) string {
	p, _ := r.Context().Value(mountKey{}).(string)
	return p
}
