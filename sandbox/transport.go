package sandbox

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// Transport returns an http.RoundTripper that serves requests with s in
// the calling process, without a socket: the same routes, checks, answers,
// faults and data file as over Serve, with the loopback TCP and the
// net/http server and client connection machinery left out. An embedded
// sandbox's client spent about a fifth of its CPU per created item there.
// The URL's host only names the sandbox in the self links it answers.
//
// Like a server whose client left, a request whose context ends is
// answered with the context's error while its handler runs to completion.
func (s *Server) Transport() http.RoundTripper { return transport{s} }

type transport struct{ s *Server }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	// A RoundTripper reads and closes the body and leaves the request as it
	// is; the handler gets a copy, since it may outlive this call.
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("sandbox transport: read request body: %w", err)
		}
		body = b
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	in := req.Clone(ctx)
	in.Body = io.NopCloser(bytes.NewReader(body))
	in.ContentLength = int64(len(body))
	in.Host = cmp.Or(req.Host, req.URL.Host)
	in.RequestURI = req.URL.RequestURI()
	in.Proto, in.ProtoMajor, in.ProtoMinor = "HTTP/1.1", 1, 1
	in.RemoteAddr = "in-process"
	w := &recorder{header: http.Header{}}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("sandbox transport: %s %s: handler panic: %v", req.Method, req.URL.Path, p)
			}
		}()
		t.s.ServeHTTP(w, in)
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			return nil, err
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return w.response(req), nil
}

// recorder is the ResponseWriter of an in-process request.
type recorder struct {
	header  http.Header
	sent    http.Header // the header as it was when the status was written
	status  int
	written bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	w.sent = w.header.Clone()
}

func (w *recorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.written.Write(b)
}

func (w *recorder) response(req *http.Request) *http.Response {
	w.WriteHeader(http.StatusOK)
	n := w.written.Len()
	if w.sent.Get("Content-Length") == "" {
		w.sent.Set("Content-Length", strconv.Itoa(n))
	}
	return &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          io.NopCloser(&w.written),
		ContentLength: int64(n),
		Request:       req,
	}
}
