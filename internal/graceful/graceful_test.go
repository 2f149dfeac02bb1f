package graceful

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

func TestServeStopsPromptlyAndFinishesRequests(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		time.Sleep(300 * time.Millisecond) // in flight when the stop comes
		io.WriteString(w, "done")
	})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, srv, ln, 5*time.Second) }()

	idle, err := net.Dial("tcp", ln.Addr().String()) // never sends a request
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	body := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String())
		if err != nil {
			body <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body <- string(b)
	}()
	<-started
	start := time.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stop took %s", d)
	}
	if got := <-body; got != "done" {
		t.Errorf("the request in flight got %q, want it finished", got)
	}
}
