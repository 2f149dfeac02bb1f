// Package graceful serves HTTP until a context ends, then shuts down in
// two phases: no new connections, and requests in flight finish within a
// grace period.
package graceful

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Serve serves srv on ln until ctx is done, then shuts it down and returns
// nil, or the error that stopped it. Connections accepted but never sent a
// request (clients and browsers open some speculatively) are closed at
// once: net/http's Shutdown would wait 5 s for them.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, grace time.Duration) error {
	var mu sync.Mutex
	fresh := map[net.Conn]bool{}
	prev := srv.ConnState
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		mu.Lock()
		if st == http.StateNew {
			fresh[c] = true
		} else {
			delete(fresh, c)
		}
		mu.Unlock()
		if prev != nil {
			prev(c, st)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	srv.SetKeepAlivesEnabled(false)
	mu.Lock()
	for c := range fresh {
		c.Close()
	}
	mu.Unlock()
	err := srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
