package worker

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/feeds"
	"github.com/feedworker/feedworker/history"
	"github.com/feedworker/feedworker/publish"
)

// The console: server-rendered pages (no script, no external asset) over
// the status, the history and the API's last hour, and two guarded actions.

//go:embed console/*.html
var consoleFiles embed.FS

// stripPolls is how many polls a feed's health strip shows.
const stripPolls = 40

// pageBase is what every console page shows around its content.
type pageBase struct {
	Title    string
	Now      time.Time
	Version  string
	Path     string
	Query    string
	Flash    string
	FlashErr string
	Auth     authView
}

type authView struct {
	Configured bool // admin.token is set
	SignedIn   bool
	CSRF       string
}

type dashboardPage struct {
	Base    pageBase
	Status  *Status
	Chart   chartView
	Store   string
	APIName string
}

type feedPage struct {
	Base     pageBase
	Feed     FeedStatus
	Settings string
	Items    []history.Item
	Polls    []history.Poll
	Content  string // the API's content URL, "%d" for the id
	Dead     []DeadLetter
}

// deadView is what the dead letters table needs.
type deadView struct {
	Dead     []DeadLetter
	Now      time.Time
	SignedIn bool
	CSRF     string
	Path     string
}

type searchPage struct {
	Base  pageBase
	Found []history.Found
}

func (w *Worker) consoleTemplates() *template.Template {
	return template.Must(template.New("console").Funcs(template.FuncMap{
		"ago":      agoHTML,
		"agoMS":    func(ms int64, now time.Time) template.HTML { return agoHTML(msTime(ms), now) },
		"describe": history.Describe,
		"since":    history.Since,
		"pollTip":  pollTip,
		"pollTone": pollTone,
		"bytes":    humanBytes,
		"contentURL": func(pattern string, id int64) string {
			if pattern == "" || id == 0 {
				return ""
			}
			return fmt.Sprintf(pattern, id)
		},
		"pathEscape": url.PathEscape,
		"add":        func(a, b any) float64 { return num(a) + num(b) },
		"sub":        func(a, b any) float64 { return num(a) - num(b) },
		"div":        func(a, b any) float64 { return num(a) / num(b) },
		"failing": func(fs []FeedStatus) int {
			n := 0
			for _, f := range fs {
				if !f.Healthy() {
					n++
				}
			}
			return n
		},
		"deadView": func(b pageBase, d []DeadLetter) deadView {
			return deadView{Dead: d, Now: b.Now, SignedIn: b.Auth.SignedIn, CSRF: b.Auth.CSRF, Path: b.Path}
		},
	}).ParseFS(consoleFiles, "console/*.html"))
}

// mountConsole adds the console's routes to the admin mux.
func (w *Worker) mountConsole(mux *http.ServeMux) {
	tpl := w.consoleTemplates()
	render := func(rw http.ResponseWriter, name string, data any) {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		rw.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'")
		if err := tpl.ExecuteTemplate(rw, name, data); err != nil {
			w.log.Warn("console: render failed", "page", name, "err", err)
		}
	}
	mux.HandleFunc("GET /{$}", func(rw http.ResponseWriter, r *http.Request) {
		st, err := w.currentStatus(r.Context())
		if err != nil {
			http.Error(rw, "status: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		cfg := w.config()
		render(rw, "dashboard.html", dashboardPage{
			Base: w.pageBase(r, "feedworker"), Status: st, Chart: newChart(st.Hours),
			Store: storeName(cfg), APIName: apiName(cfg),
		})
	})
	mux.HandleFunc("GET /feeds/{id}", func(rw http.ResponseWriter, r *http.Request) {
		page, err := w.feedPage(r)
		if errors.Is(err, errNoFeed) {
			http.Error(rw, err.Error(), http.StatusNotFound)
			return
		}
		if err != nil {
			http.Error(rw, err.Error(), http.StatusServiceUnavailable)
			return
		}
		render(rw, "feed.html", page)
	})
	mux.HandleFunc("GET /search", func(rw http.ResponseWriter, r *http.Request) {
		q := strings.TrimSpace(r.URL.Query().Get("q"))
		found, err := w.hist.store.Find(r.Context(), w.feedIDs(), q, 100)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusServiceUnavailable)
			return
		}
		page := searchPage{Base: w.pageBase(r, "search: "+q), Found: found}
		page.Base.Query = q
		render(rw, "search.html", page)
	})
	// Forms must come from this origin, whatever their credentials; a
	// request refused for coming from elsewhere is logged and counted too.
	sameOrigin := func(name string, h http.Handler) http.Handler {
		cop := http.NewCrossOriginProtection()
		cop.SetDenyHandler(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			w.console.actions.WithLabelValues(name, "refused").Inc()
			w.log.Warn("console: action refused", "action", name, "remote", r.RemoteAddr, "cause", "cross-origin request")
			http.Error(rw, "not allowed: cross-origin request", http.StatusForbidden)
		}))
		return cop.Handler(h)
	}
	mux.Handle("POST /signin", sameOrigin("sign_in", http.HandlerFunc(w.signIn)))
	mux.Handle("POST /signout", sameOrigin("sign_out", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		http.SetCookie(rw, &http.Cookie{Name: sessionCookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(rw, r, localPath(r.PostFormValue("next")), http.StatusSeeOther)
	})))
	mux.Handle("POST /feeds/{id}/poll", sameOrigin("poll_now", w.action("poll_now", func(ctx context.Context, r *http.Request) (string, error) {
		id := r.PathValue("id")
		if err := w.poller.PollNow(id); err != nil {
			return "", err
		}
		return "a poll of " + id + " starts now", nil
	})))
	mux.Handle("POST /console/retry", sameOrigin("retry", w.action("retry", func(ctx context.Context, r *http.Request) (string, error) {
		id := r.PostFormValue("id")
		if err := w.pub.RetryDeadLetter(ctx, id); err != nil {
			return "", err
		}
		return "dead letter " + id + " is queued again", nil
	})))
}

func (w *Worker) pageBase(r *http.Request, title string) pageBase {
	cfg := w.config()
	b := pageBase{Title: title, Now: w.now(), Version: w.version, Path: r.URL.RequestURI(),
		Flash: r.URL.Query().Get("done"), FlashErr: r.URL.Query().Get("failed")}
	b.Auth.Configured = cfg.Admin.Token != ""
	if b.Auth.Configured {
		if s := w.console.session(r, cfg.Admin.Token, time.Now()); s != "" {
			b.Auth.SignedIn, b.Auth.CSRF = true, w.console.csrf(s)
		}
	}
	return b
}

// signIn checks the typed admin token and opens a session.
func (w *Worker) signIn(rw http.ResponseWriter, r *http.Request) {
	token := w.config().Admin.Token
	next := localPath(r.PostFormValue("next"))
	if token == "" || !tokenEqual(r.PostFormValue("token"), token) {
		w.console.actions.WithLabelValues("sign_in", "refused").Inc()
		w.log.Warn("console: sign-in refused", "remote", r.RemoteAddr, "read_only", token == "")
		http.Redirect(rw, r, withParam(next, "failed", "sign-in refused: wrong token"), http.StatusSeeOther)
		return
	}
	w.console.actions.WithLabelValues("sign_in", "ok").Inc()
	w.log.Info("console: signed in", "remote", r.RemoteAddr)
	http.SetCookie(rw, &http.Cookie{Name: sessionCookie, Value: w.console.newSession(token, time.Now()), Path: "/",
		MaxAge: int(sessionTTL.Seconds()), HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(rw, r, next, http.StatusSeeOther)
}

// action guards, runs, logs and counts one console action. A form gets a
// redirect back with the outcome; a script (bearer) gets it as text.
func (w *Worker) action(name string, run func(ctx context.Context, r *http.Request) (string, error)) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(rw, r.Body, 64<<10)
		who, err := w.console.authorize(r, w.config().Admin.Token, time.Now())
		next := localPath(r.PostFormValue("next"))
		if err != nil {
			w.console.actions.WithLabelValues(name, "refused").Inc()
			w.log.Warn("console: action refused", "action", name, "remote", r.RemoteAddr, "cause", err)
			code := http.StatusUnauthorized
			if errors.Is(err, errReadOnly) || errors.Is(err, errBadCSRF) {
				code = http.StatusForbidden
			}
			http.Error(rw, err.Error(), code)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		msg, err := run(ctx, r)
		if err != nil {
			w.console.actions.WithLabelValues(name, "failed").Inc()
			w.log.Warn("console: action failed", "action", name, "by", who, "remote", r.RemoteAddr, "err", err)
			code := http.StatusServiceUnavailable
			if errors.Is(err, feeds.ErrNotScheduled) || errors.Is(err, publish.ErrNotFound) {
				code = http.StatusNotFound
			}
			if who == "session" {
				http.Redirect(rw, r, withParam(next, "failed", err.Error()), http.StatusSeeOther)
				return
			}
			http.Error(rw, err.Error(), code)
			return
		}
		w.console.actions.WithLabelValues(name, "ok").Inc()
		w.log.Info("console: action", "action", name, "by", who, "remote", r.RemoteAddr, "result", msg)
		if who == "session" {
			http.Redirect(rw, r, withParam(next, "done", msg), http.StatusSeeOther)
			return
		}
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rw.WriteHeader(http.StatusAccepted)
		fmt.Fprintln(rw, msg)
	})
}

func tokenEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func withParam(path, k, v string) string {
	u, err := url.Parse(path)
	if err != nil {
		return "/"
	}
	q := u.Query()
	q.Del("done")
	q.Del("failed")
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}

var errNoFeed = errors.New("no such feed in the config")

func (w *Worker) feedPage(r *http.Request) (feedPage, error) {
	id := r.PathValue("id")
	ctx := r.Context()
	st, err := w.Status(ctx)
	if err != nil {
		return feedPage{}, err
	}
	i := slices.IndexFunc(st.Feeds, func(f FeedStatus) bool { return f.ID == id })
	if i < 0 {
		return feedPage{}, fmt.Errorf("feed %q: %w", id, errNoFeed)
	}
	h, err := w.hist.store.Feed(ctx, id)
	if err != nil {
		return feedPage{}, err
	}
	page := feedPage{Base: w.pageBase(r, id), Feed: st.Feeds[i], Items: h.Items, Polls: h.Polls}
	if q := strings.TrimSpace(r.URL.Query().Get("q")); q != "" {
		page.Base.Query = q
		page.Items = slices.DeleteFunc(page.Items, func(it history.Item) bool { return !it.Matches(strings.ToLower(q)) })
	}
	page.Settings = w.feedSettings(id)
	page.Content = w.contentURLPattern()
	for _, d := range st.DeadLetters {
		if d.FeedID == id {
			page.Dead = append(page.Dead, d)
		}
	}
	return page, nil
}

// feedSettings is the feed's configuration as YAML, secrets redacted.
func (w *Worker) feedSettings(id string) string {
	for _, f := range w.config().Redacted().Feeds {
		if f.ID == id {
			b, err := yaml.Marshal(f)
			if err != nil {
				return "(cannot show the settings: " + err.Error() + ")"
			}
			// Unset settings (the defaults apply) are noise here.
			var keep []string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasSuffix(l, ": null") || strings.HasSuffix(l, ": []") || strings.HasSuffix(l, ": {}") || strings.HasSuffix(l, `: ""`) {
					continue
				}
				keep = append(keep, l)
			}
			return strings.Join(keep, "\n")
		}
	}
	return ""
}

// contentURLPattern is where the API shows a content item (the embedded
// sandbox is served by this admin server under /sandbox).
func (w *Worker) contentURLPattern() string {
	base := w.config().API.BaseURL
	if base == config.EmbeddedAPI {
		return "/sandbox/v3/content/%d"
	}
	return strings.ReplaceAll(strings.TrimSuffix(config.RedactURL(base), "/"), "%", "%%") + "/v3/content/%d"
}

func (w *Worker) feedIDs() []string {
	var ids []string
	for _, f := range w.config().Feeds {
		ids = append(ids, f.ID)
	}
	return ids
}

// agoHTML is a relative time with the exact time on hover; v is a
// time.Time or a *time.Time.
func agoHTML(v any, now time.Time) template.HTML {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x != nil {
			t = *x
		}
	}
	if t.IsZero() {
		return "never"
	}
	rel := history.Since(now.Sub(t)) + " ago"
	if t.After(now) {
		rel = "in " + history.Since(t.Sub(now))
	}
	if d := now.Sub(t); d > -time.Second && d < 5*time.Second {
		rel = "just now"
	}
	return template.HTML(fmt.Sprintf(`<time datetime="%s" title="%s">%s</time>`,
		t.UTC().Format(time.RFC3339), t.UTC().Format("2006-01-02 15:04:05 UTC"), template.HTMLEscapeString(rel)))
}

// num reads the numbers templates do arithmetic on (their constants are
// ints, the chart's geometry float64).
func num(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// pollTone is a poll's colour in the health strip.
func pollTone(p history.Poll) string {
	switch p.Result {
	case "ok":
		return "ok"
	case "not_modified":
		return "nm"
	}
	return "bad"
}

func pollTip(p history.Poll) string {
	s := p.Time().UTC().Format("2006-01-02 15:04:05 UTC") + " · " + p.Result
	if p.StatusCode != 0 {
		s += " · HTTP " + strconv.Itoa(p.StatusCode)
	}
	s += fmt.Sprintf(" · %d ms", p.DurationMS)
	if p.Error != "" {
		s += " · " + p.Error
	}
	return s
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
