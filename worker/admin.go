package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/feedworker/feedworker/internal/graceful"
)

// Check is one readiness condition of /readyz.
type Check struct {
	Name string
	Run  func(ctx context.Context) error
}

// Admin serves /metrics, /healthz, /readyz, the status page at / and
// /status.json, and optionally net/http/pprof.
type Admin struct {
	Gatherer prometheus.Gatherer
	Checks   []Check
	Status   func(ctx context.Context) (*Status, error)
	Pprof    bool
	Logger   *slog.Logger
	// Extra mounts more handlers by path prefix (the embedded sandbox).
	Extra map[string]http.Handler
	// Console, when set, mounts the console's pages and actions in place
	// of the plain status page at /.
	Console func(mux *http.ServeMux)
}

// Handler returns the admin mux.
func (a *Admin) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.Gatherer, promhttp.HandlerOpts{ErrorLog: slogErrorLogger{a.Logger}}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.HandleFunc("GET /status.json", a.statusJSON)
	if a.Console != nil {
		a.Console(mux)
	} else {
		mux.HandleFunc("GET /{$}", a.statusPage)
	}
	for prefix, h := range a.Extra {
		mux.Handle(prefix, h)
	}
	if a.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// Serve serves the admin endpoints on ln until ctx is done, then shuts down.
func (a *Admin) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if err := graceful.Serve(ctx, srv, ln, 5*time.Second); err != nil {
		return fmt.Errorf("admin server: %w", err)
	}
	return nil
}

// readyz runs every check with a bound and names each failing one.
func (a *Admin) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	type result struct {
		name string
		err  error
	}
	results := make(chan result, len(a.Checks))
	for _, c := range a.Checks {
		go func() { results <- result{c.Name, c.Run(ctx)} }()
	}
	var failed []string
	for range a.Checks {
		res := <-results
		if res.err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", res.name, res.err))
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if len(failed) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready\n%s\n", strings.Join(slices.Sorted(slices.Values(failed)), "\n"))
		return
	}
	fmt.Fprintln(w, "ready")
}

func (a *Admin) statusJSON(w http.ResponseWriter, r *http.Request) {
	st, err := a.Status(r.Context())
	if err != nil {
		http.Error(w, "status: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(st); err != nil {
		a.Logger.Warn("status.json: write failed", "err", err)
	}
}

func (a *Admin) statusPage(w http.ResponseWriter, r *http.Request) {
	st, err := a.Status(r.Context())
	if err != nil {
		http.Error(w, "status: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := statusTemplate.Execute(w, st); err != nil {
		a.Logger.Warn("status page: render failed", "err", err)
	}
}

// slogErrorLogger adapts slog to promhttp's Println-style logger.
type slogErrorLogger struct{ l *slog.Logger }

func (s slogErrorLogger) Println(v ...any) { s.l.Error("metrics handler", "err", fmt.Sprint(v...)) }

var statusTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
	"ago": func(t *time.Time) string {
		if t == nil || t.IsZero() {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>feedworker status</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;width:100%;margin-bottom:1.5em}
th,td{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f4f4f4}.err{color:#a00}.ok{color:#070}.muted{color:#777}
code{font-size:12px}
</style></head>
<body>
<h1>feedworker</h1>
{{if .Stale}}<p class="err" id="stale">Stale: the store does not answer ({{.StoreProblem}}). Showing the last known state.</p>{{end}}
<p>Version {{.Version}} · generated {{ago .Generated}} · {{len .Feeds}} feeds · outbox {{.Outbox}}{{if .WaitingForDeadOwner}} ({{.WaitingForDeadOwner}} waiting for a dead worker){{end}} · dead letters {{len .DeadLetters}}</p>
{{with .Pacing}}<h2>Pacing</h2>
<p id="api">Rate {{if .Rate}}{{printf "%.1f" .Rate}}/s{{else}}unpaced{{end}}{{if .Ceiling}} (ceiling {{printf "%.0f" .Ceiling}}/s){{end}}{{if .Shared}}, shared by all replicas{{end}}
· refused: {{.Limited}} × 429, {{.Unavailable}} × 503 with Retry-After · {{.Waits}} waits ({{printf "%.1f" .WaitedSeconds}}s){{if .HoldUntil}} · Retry-After until {{ago .HoldUntil}}{{end}}
· circuit <span class="{{if eq .Gate "closed"}}ok{{else}}err{{end}}">{{.Gate}}</span>{{if .GateFailures}} ({{.GateFailures}} failures in a row){{end}}</p>{{end}}
<h2>Feeds</h2>
<table id="feeds">
<thead><tr><th>Feed</th><th>URL</th><th>Last poll</th><th>Result</th><th>Next poll</th><th>Published</th><th>Last error</th></tr></thead>
<tbody>
{{range .Feeds}}<tr data-feed="{{.ID}}">
<td>{{.ID}}{{if not .Enabled}} <span class="muted">(disabled)</span>{{end}}{{if .Gone}} <span class="err">(gone)</span>{{end}}</td>
<td><code>{{.URL}}</code>{{if .MovedTo}}<br>moved to <code>{{.MovedTo}}</code>{{end}}</td>
<td>{{ago .LastPoll}}</td>
<td class="{{if .Healthy}}ok{{else}}err{{end}}">{{.LastResult}}{{if gt .Failures 0}} ({{.Failures}} failures){{end}}</td>
<td>{{ago .NextPoll}}</td>
<td>{{.Published}}</td>
<td class="err">{{.LastError}}{{range .Warnings}}<div class="warning" data-warning="{{.Code}}">warning: {{.Message}}</div>{{end}}</td>
</tr>{{end}}
</tbody></table>
<h2>Dead letters</h2>
{{if .DeadLetters}}<table id="deadletters">
<thead><tr><th>ID</th><th>Feed</th><th>Type</th><th>Title</th><th>Reason</th><th>When</th></tr></thead>
<tbody>{{range .DeadLetters}}<tr><td><code>{{.ID}}</code></td><td>{{.FeedID}}</td><td>{{.Type}}</td><td>{{.Title}}</td><td class="err">{{.Reason}}</td><td>{{ago .At}}</td></tr>{{end}}</tbody>
</table>
<p class="muted">Retry with <code>feedworker deadletters retry ID</code> or <code>--all</code>.</p>
{{else}}<p class="muted">None.</p>{{end}}
{{if .Unreadable}}<h2>Unreadable answers</h2>
<table id="unreadable">
<thead><tr><th>Feed</th><th>Cause</th><th>Count</th><th>Last reason</th><th>When</th></tr></thead>
<tbody>{{range .Unreadable}}<tr><td>{{.FeedID}}</td><td><code>{{.Cause}}</code></td><td>{{.Count}}</td><td class="err">{{.Reason}}</td><td>{{ago .Last}}</td></tr>{{end}}</tbody>
</table>
<p class="muted">The service answered 2xx with a body the client could not read; see the dead letters.</p>
{{end}}<p class="muted"><a href="/status.json">status.json</a> · <a href="/metrics">metrics</a> · <a href="/readyz">readyz</a></p>
</body></html>
`))
