package worker

import "net/http"

// userAgent sets http.user_agent on requests that carry none: the token
// requests of x/oauth2, which the acs client does not build (it sets the
// header on its own requests), so the service sees one user agent.
type userAgent struct {
	base http.RoundTripper
	ua   string
}

func (t userAgent) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("User-Agent") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("User-Agent", t.ua)
	}
	return t.base.RoundTrip(r)
}
