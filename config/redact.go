package config

import (
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"strings"
)

// RedactedValue replaces a secret in Redacted copies and log output.
const RedactedValue = "[REDACTED]"

// Redacted returns a deep copy of c that is safe to log or show on a
// status page: client_secret and token are replaced by RedactedValue and
// the passwords in URLs (api, redis, proxy, feeds) by "xxxxx".
func (c *Config) Redacted() *Config {
	if c == nil {
		return nil
	}
	r := new(Config)
	*r = *c // File and the line index, which is never written after Load
	v := reflect.ValueOf(r).Elem()
	for _, f := range yamlFields(v.Type()) {
		fv := v.FieldByIndex(f.Index)
		fv.Set(deepCopy(fv))
	}
	r.API = r.API.redacted()
	r.Redis = r.Redis.redacted()
	r.HTTP = r.HTTP.redacted()
	if r.Admin.Token != "" {
		r.Admin.Token = RedactedValue
	}
	for i := range r.Feeds {
		r.Feeds[i].URL = RedactURL(r.Feeds[i].URL)
	}
	return r
}

// LogValue logs a summary of the configuration without secrets. It has a
// value receiver, unlike Config's other methods, so that logging a Config
// value (not only a *Config) is covered too: slog would otherwise print
// every field, or marshal them to JSON, secrets included.
func (c Config) LogValue() slog.Value {
	enabled := 0
	for _, f := range c.Feeds {
		if f.Enabled == nil || *f.Enabled {
			enabled++
		}
	}
	attrs := []slog.Attr{
		slog.String("file", c.File),
		slog.Int("feeds", len(c.Feeds)),
		slog.Int("enabled", enabled),
		slog.Any("api", c.API),
	}
	if c.Redis.Enabled() {
		attrs = append(attrs, slog.Any("redis", c.Redis))
	} else {
		attrs = append(attrs, slog.String("store", c.Store.Path))
	}
	return slog.GroupValue(attrs...)
}

func (a API) redacted() API {
	if a.ClientSecret != "" {
		a.ClientSecret = RedactedValue
	}
	if a.Token != "" {
		a.Token = RedactedValue
	}
	a.BaseURL = RedactURL(a.BaseURL)
	a.TokenURL = RedactURL(a.TokenURL)
	return a
}

// String formats a with its token redacted.
func (a Admin) String() string {
	type plain Admin
	if a.Token != "" {
		a.Token = RedactedValue
	}
	return fmt.Sprintf("%+v", plain(a))
}

// String formats a with its secrets redacted; fmt uses it for an API on
// its own and inside a printed Config.
func (a API) String() string {
	type plain API // without methods, so that formatting does not recurse
	return fmt.Sprintf("%+v", plain(a.redacted()))
}

// LogValue logs where and how the API is reached, never a secret.
func (a API) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", RedactURL(a.BaseURL)),
		slog.String("auth", a.Auth()),
		slog.String("client_id", a.ClientID),
	)
}

func (r Redis) redacted() Redis {
	r.URL = RedactURL(r.URL)
	if r.Password != "" {
		r.Password = "xxxxx"
	}
	return r
}

// String formats r with the password in its URL redacted.
func (r Redis) String() string {
	type plain Redis
	return fmt.Sprintf("%+v", plain(r.redacted()))
}

// LogValue logs where Redis is, never a password.
func (r Redis) LogValue() slog.Value {
	return slog.GroupValue(slog.String("mode", r.Topology()), slog.String("at", r.Describe()), slog.String("prefix", r.Prefix))
}

func (h HTTP) redacted() HTTP {
	h.Proxy = RedactURL(h.Proxy)
	return h
}

// String formats h with the password in its proxy URL redacted.
func (h HTTP) String() string {
	type plain HTTP
	return fmt.Sprintf("%+v", plain(h.redacted()))
}

// LogValue logs h with the password in its proxy URL redacted.
func (h HTTP) LogValue() slog.Value {
	type plain HTTP
	return slog.AnyValue(plain(h.redacted()))
}

// sensitiveQueryKeys are query parameters whose values are credentials, as
// private feed services and APIs put them in URLs.
var sensitiveQueryKeys = []string{"token", "key", "secret", "password", "passwd", "pass", "auth", "sig", "signature", "session", "sid", "code"}

// RedactURL returns raw fit for an error, a log line or the status page:
// the user information becomes xxxxx (user names are often tokens too), the
// values of credential-like query parameters (token,
// key, secret, sig...) become "redacted", and an unparseable URL shows its
// scheme only.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.Index(raw, "://"); i > 0 && !strings.ContainsAny(raw[:i], "/?#@") {
			return raw[:i] + "://(unparseable)"
		}
		return "(unparseable url)"
	}
	if u.User != nil {
		u.User = url.User("xxxxx")
	}
	if u.RawQuery != "" {
		q := u.Query()
		changed := false
		for k := range q {
			lk := strings.ToLower(k)
			for _, sk := range sensitiveQueryKeys {
				if strings.Contains(lk, sk) {
					q[k] = []string{"redacted"}
					changed = true
					break
				}
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// String is the one-line summary, so that fmt never prints a secret (a
// feed URL's password or token, the client secret).
func (c Config) String() string { return c.Summary() }

// GoString is String: %#v must not print secrets either.
func (c Config) GoString() string { return c.String() }

// String names the feed by id and redacted URL.
func (f Feed) String() string { return fmt.Sprintf("feed %s (%s)", f.ID, RedactURL(f.URL)) }

// GoString is String.
func (f Feed) GoString() string { return f.String() }
