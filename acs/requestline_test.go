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
// as a struct, to the bytes of a request built the plain way from a path
// written out here, and each string parameter to one segment of the path
// as the server reads it. Paths with escapes, prefixes, empty ports and
// queries, parameters holding "/" and "%", routes (a template path is
// configurable) holding spaces, non-ASCII and "%".
func TestRequestsOnTheWire(t *testing.T) {
	for _, base := range []struct{ url, prefix string }{
		{"http://127.0.0.1:8089", ""}, {"http://h:/api/", "/api"},
		{"https://[::1]:8443/a%20b/pre fix", "/a%20b/pre%20fix"}, {"http://ex.com/%C3%BC/", "/%C3%BC"},
		{"http://ex.com/a%2Fb/", "/a%2Fb"},
	} {
		for _, tc := range []struct {
			method, route string
			query         url.Values
			body          any
			params        []any
			path          string // as sent, after the base's prefix
		}{
			{http.MethodPost, "/v3/story", nil, &StoryCreate{Title: Ptr("t <&>")}, nil, "/v3/story"},
			{http.MethodGet, "/v3/story/{id}", nil, nil, []any{int64(42)}, "/v3/story/42"},
			{http.MethodGet, "/v3/{type}/template", url.Values{"q": {"a b+c", "2026-01-01 00:00:00"}, "ü": {"%"}}, nil, []any{"a/b c?d#e%25ü"},
				"/v3/a%2Fb%20c%3Fd%23e%2525%C3%BC/template"},
			{http.MethodDelete, "/v3/{type}/{id}", nil, nil, []any{"x;y=z", int64(7)}, "/v3/x%3By=z/7"},
			{http.MethodGet, "/v3/ü t/{type}", nil, nil, []any{"a/b"}, "/v3/%C3%BC%20t/a%2Fb"},
			{http.MethodGet, "/v3/100%/{type}", nil, nil, []any{"a"}, "/v3/100%25/a"},
			{http.MethodGet, "/v3/100%/{type}", nil, nil, []any{"a/b"}, "/v3/100%25/a%2Fb"},
		} {
			wt := &wireTransport{}
			c, err := NewClient(base.url, &http.Client{Transport: wt}, WithUserAgent("ua/1"))
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
			// http.NewRequest, headers Set one by one.
			u, err := url.Parse(base.url)
			if err != nil {
				t.Fatal(err)
			}
			ref := u.Scheme + "://" + strings.TrimSuffix(u.Host, ":") + base.prefix + tc.path
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
				t.Fatalf("%s %s on %s:\n got %q\nwant %q", tc.method, tc.route, base.url, wt.wire, want.Bytes())
			}
			// And a server reads it as one request, each string
			// parameter as one segment of the path, as it was given.
			got, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(wt.wire[0])))
			if err != nil {
				t.Fatalf("%s %s on %s: %v", tc.method, tc.route, base.url, err)
			}
			for _, p := range tc.params {
				s, ok := p.(string)
				if !ok {
					continue
				}
				segs := strings.Split(strings.TrimPrefix(got.URL.EscapedPath(), base.prefix), "/")
				found := false
				for _, seg := range segs {
					if dec, err := url.PathUnescape(seg); err == nil && dec == s {
						found = true
					}
				}
				if !found {
					t.Errorf("%s %s on %s: parameter %q is not a segment of %s", tc.method, tc.route, base.url, s, got.URL.EscapedPath())
				}
			}
		}
	}
}
