package acs

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// wireTransport keeps each request as it goes on the wire and answers 200.
type wireTransport struct{ wire [][]byte }

func (w *wireTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		return nil, err
	}
	w.wire = append(w.wire, b.Bytes())
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

// TestRequestsOnTheWire holds attempt, which fills the request's URL in
// as a struct, to the bytes of a request built the plain way, and each
// string parameter to one segment of the path as the server reads it.
// Paths with escapes, prefixes, empty ports and queries.
func TestRequestsOnTheWire(t *testing.T) {
	for _, base := range []string{"http://127.0.0.1:8089", "http://h:/api/", "https://[::1]:8443/a%20b/pre fix", "http://ex.com/%C3%BC/"} {
		for _, tc := range []struct {
			method, route string
			query         url.Values
			body          any
			params        []any
		}{
			{http.MethodPost, "/v3/story", nil, &StoryCreate{Title: Ptr("t <&>")}, nil},
			{http.MethodGet, "/v3/story/{id}", nil, nil, []any{int64(42)}},
			{http.MethodGet, "/v3/{type}/template", url.Values{"q": {"a b+c", "2026-01-01 00:00:00"}, "ü": {"%"}}, nil, []any{"a/b c?d#e%25ü"}},
			{http.MethodDelete, "/v3/{type}/{id}", nil, nil, []any{"x;y=z", int64(7)}},
		} {
			wt := &wireTransport{}
			c, err := NewClient(base, &http.Client{Transport: wt}, WithUserAgent("ua/1"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.newRequest(tc.method, tc.route, tc.query, tc.body, tc.params...)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.do(context.Background(), r, nil); err != nil {
				t.Fatal(err)
			}

			// As a URL written out as a string and parsed back by
			// http.NewRequest, headers Set one by one: the base's escaped
			// path, then the route with its parameters escaped once.
			u, err := url.Parse(base)
			if err != nil {
				t.Fatal(err)
			}
			ref := u.Scheme + "://" + strings.TrimSuffix(u.Host, ":") + strings.TrimSuffix(u.EscapedPath(), "/") + r.path
			if q := strings.ReplaceAll(r.query.Encode(), "+", "%20"); q != "" {
				ref += "?" + q
			}
			var rd io.Reader
			if r.body != nil {
				rd = bytes.NewReader(r.body)
			}
			old, err := http.NewRequest(r.method, ref, rd)
			if err != nil {
				t.Fatal(err)
			}
			old.Header.Set("Accept", "application/json")
			old.Header.Set("User-Agent", "ua/1")
			if r.body != nil {
				old.Header.Set("Content-Type", "application/json")
			}
			var want bytes.Buffer
			if err := old.Write(&want); err != nil {
				t.Fatal(err)
			}
			if len(wt.wire) != 1 || !bytes.Equal(wt.wire[0], want.Bytes()) {
				t.Fatalf("%s %s on %s:\n got %q\nwant %q", tc.method, tc.route, base, wt.wire, want.Bytes())
			}
			// And a server reads it as one request, each string
			// parameter as one segment of the path, as it was given.
			got, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(wt.wire[0])))
			if err != nil {
				t.Fatalf("%s %s on %s: %v", tc.method, tc.route, base, err)
			}
			for _, p := range tc.params {
				s, ok := p.(string)
				if !ok {
					continue
				}
				found := false
				for _, seg := range strings.Split(got.URL.EscapedPath(), "/") {
					if dec, err := url.PathUnescape(seg); err == nil && dec == s {
						found = true
					}
				}
				if !found {
					t.Errorf("%s %s on %s: parameter %q is not a segment of %s", tc.method, tc.route, base, s, got.URL.EscapedPath())
				}
			}
		}
	}
}
