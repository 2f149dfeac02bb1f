package sandbox

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFaultLatency(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Faults: Faults{Latency: 60 * time.Millisecond}})
	start := time.Now()
	f.must(200, "GET", "/v3/content", nil)
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Errorf("answered in %v with 60ms latency", d)
	}
	// The token endpoint is not delayed.
	start = time.Now()
	f.newToken()
	if d := time.Since(start); d >= 60*time.Millisecond {
		t.Errorf("token endpoint took %v", d)
	}
	// A request whose context ends during the latency is answered at once.
	if err := f.srv.SetFaults(Faults{Latency: time.Hour}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := f.send(f.request("POST", "/v3/category", env(map[string]any{"description": "x"})).WithContext(ctx))
	if res.status != 503 || f.srv.Counts()["category"] != 0 {
		t.Errorf("cancelled during latency: status %d, %d categories", res.status, f.srv.Counts()["category"])
	}
}

func TestFaultErrors(t *testing.T) {
	t.Parallel()
	t.Run("every request fails unapplied", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, Options{Faults: Faults{ErrorRate: 1, ErrorCodes: []int{503}}})
		for range 3 {
			res := f.must(503, "POST", "/v3/story", env(map[string]any{"title": "x"}))
			res.apiErr(t)
		}
		if n := f.srv.Counts()["story"]; n != 0 {
			t.Errorf("%d stories stored by failed requests", n)
		}
		// Faults come before authentication, like a failing front end.
		req := httptest.NewRequest("GET", "/v3/content", nil)
		if res := f.send(req); res.status != 503 {
			t.Errorf("without a token: %d", res.status)
		}
		f.newToken() // the token endpoint is never faulted
		reqs := f.srv.Requests()
		if last := reqs[len(reqs)-2]; last.Fault != "error" || last.Status != 503 {
			t.Errorf("log entry %+v", last)
		}
	})
	t.Run("default codes are 500 and 503", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, Options{Faults: Faults{ErrorRate: 1}})
		seen := map[int]int{}
		for range 40 {
			seen[f.do("GET", "/v3/content", nil).status]++
		}
		if len(seen) != 2 || seen[500] == 0 || seen[503] == 0 {
			t.Errorf("statuses %v, want both 500 and 503", seen)
		}
	})
	t.Run("seeded rate is reproducible", func(t *testing.T) {
		t.Parallel()
		run := func(seed uint64) []int {
			f := newFixture(t, Options{Faults: Faults{ErrorRate: 0.5, Seed: seed}})
			var got []int
			for range 40 {
				got = append(got, f.do("GET", "/v3/content", nil).status)
			}
			return got
		}
		a, b := run(7), run(7)
		if !slices.Equal(a, b) {
			t.Errorf("same seed, different faults:\n%v\n%v", a, b)
		}
		ok := 0
		for _, s := range a {
			if s == 200 {
				ok++
			}
		}
		if ok < 8 || ok > 32 {
			t.Errorf("%d of 40 succeeded at error rate 0.5: %v", ok, a)
		}
	})
}

func TestFaultRateLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Faults: Faults{RateLimit: 1, RateBurst: 2}})
	step := func(want int, retryAfter string) {
		t.Helper()
		res := f.do("GET", "/v3/content", nil)
		if res.status != want || res.header.Get("Retry-After") != retryAfter {
			t.Fatalf("status %d Retry-After %q, want %d %q", res.status, res.header.Get("Retry-After"), want, retryAfter)
		}
	}
	step(200, "")
	step(200, "")
	step(429, "1")
	f.clock.Advance(time.Second)
	step(200, "")
	step(429, "1")
	f.clock.Advance(10 * time.Second) // refills to the burst, not beyond
	step(200, "")
	step(200, "")
	step(429, "1")
	if last := f.srv.Requests()[len(f.srv.Requests())-1]; last.Fault != "rate_limit" || last.Status != 429 {
		t.Errorf("log entry %+v", last)
	}

	slow := newFixture(t, Options{Faults: Faults{RateLimit: 0.5}})
	f = slow
	step(200, "")
	step(429, "2")
	f.clock.Advance(time.Second)
	step(429, "1")
	f.clock.Advance(time.Second)
	step(200, "")
}

func TestFaultCommitThenFail(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	if err := f.srv.SetFaults(Faults{CommitThenFail: 1}); err != nil {
		t.Fatal(err)
	}
	res := f.must(500, "POST", "/v3/story", env(map[string]any{"title": "Applied", "external_id": "ctf-1"}))
	res.apiErr(t)
	items := f.srv.ItemsByExternalID("ctf-1")
	if len(items) != 1 || items[0].Title != "Applied" {
		t.Fatalf("the write was not applied: %+v", items)
	}
	id := items[0].ID
	f.must(500, "PUT", "/v3/story/5", env(map[string]any{"id": id, "title": "Changed"}))
	if o := f.must(200, "GET", "/v3/content/5", nil).obj(t); o["title"] != "Changed" {
		t.Errorf("update not applied: %v", o)
	}
	f.must(500, "DELETE", "/v3/story/5", nil)
	f.must(404, "GET", "/v3/content/5", nil)
	f.must(500, "POST", "/v3/subscriber/2/unsubscribe", nil)
	f.must(200, "GET", "/v3/unsubscribe/2", nil)
	// Refused writes are refused, not faulted, and reads are untouched.
	f.must(400, "POST", "/v3/story", env(map[string]any{"title": ""}))
	f.must(404, "DELETE", "/v3/story/99", nil)
	f.must(200, "GET", "/v3/content", nil)
	if last := f.srv.Requests()[len(f.srv.Requests())-5]; last.Fault != "commit_then_fail" || last.Path != "/v3/subscriber/2/unsubscribe" {
		t.Errorf("log entry %+v", last)
	}

	g := newFixture(t, Options{Faults: Faults{CommitThenFail: 0.5, Seed: 3}})
	statuses := map[int]int{}
	for i := range 20 {
		statuses[g.do("POST", "/v3/category", env(map[string]any{"description": strings.Repeat("c", i+1)})).status]++
	}
	if statuses[201] == 0 || statuses[500] == 0 || statuses[201]+statuses[500] != 20 {
		t.Errorf("statuses %v, want a mix of 201 and 500", statuses)
	}
	if n := g.srv.Counts()["category"]; n != 20 {
		t.Errorf("%d categories stored, want all 20", n)
	}
}

func TestControlEndpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	control := func(method, path, body string) response {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		return f.send(httptest.NewRequest(method, path, rd))
	}
	res := control("GET", "/_sandbox/faults", "")
	want := `{"data":{"latency":"0s","error_rate":0,"error_codes":[500,503],"rate_limit":0,"rate_burst":0,"commit_then_fail":0,"seed":0}}`
	if got := strings.TrimSpace(string(res.body)); res.status != 200 || got != want {
		t.Errorf("GET faults: %d %s, want %s", res.status, got, want)
	}
	res = control("PUT", "/_sandbox/faults", `{"latency":"5ms","error_rate":0.25,"error_codes":[502],"rate_limit":20,"rate_burst":4,"commit_then_fail":0.5,"seed":9}`)
	if res.status != 200 {
		t.Fatalf("PUT faults: %d %s", res.status, res.body)
	}
	wantF := Faults{Latency: 5 * time.Millisecond, ErrorRate: 0.25, ErrorCodes: []int{502}, RateLimit: 20, RateBurst: 4, CommitThenFail: 0.5, Seed: 9}
	if d := cmp.Diff(wantF, f.srv.Faults()); d != "" {
		t.Errorf("faults after PUT (-want +got):\n%s", d)
	}
	bad := []struct{ name, method, path, body string }{
		{"rate above 1", "PUT", "/_sandbox/faults", `{"error_rate":2}`},
		{"negative commit rate", "PUT", "/_sandbox/faults", `{"commit_then_fail":-0.1}`},
		{"4xx code", "PUT", "/_sandbox/faults", `{"error_rate":1,"error_codes":[404]}`},
		{"bad latency", "PUT", "/_sandbox/faults", `{"latency":"soon"}`},
		{"negative latency", "PUT", "/_sandbox/faults", `{"latency":"-1s"}`},
		{"negative rate limit", "PUT", "/_sandbox/faults", `{"rate_limit":-1}`},
		{"unknown key", "PUT", "/_sandbox/faults", `{"error_rte":0.5}`},
		{"not JSON", "PUT", "/_sandbox/faults", `error_rate=1`},
	}
	for _, tt := range bad {
		if res := control(tt.method, tt.path, tt.body); res.status != 400 {
			t.Errorf("%s: status %d, want 400", tt.name, res.status)
		}
	}
	if d := cmp.Diff(wantF, f.srv.Faults()); d != "" {
		t.Errorf("refused PUTs changed the faults (-want +got):\n%s", d)
	}
	if res := control("POST", "/_sandbox/faults", "{}"); res.status != 405 || res.header.Get("Allow") != "DELETE, GET, PUT" {
		t.Errorf("POST faults: %d Allow %q", res.status, res.header.Get("Allow"))
	}
	if res := control("DELETE", "/_sandbox/faults", ""); res.status != 204 {
		t.Errorf("DELETE faults: %d", res.status)
	}
	if d := cmp.Diff(Faults{}, f.srv.Faults()); d != "" {
		t.Errorf("faults after DELETE (-want +got):\n%s", d)
	}
	if res := control("GET", "/_sandbox/reset", ""); res.status != 405 {
		t.Errorf("GET reset: %d", res.status)
	}
	if res := control("GET", "/_sandbox/other", ""); res.status != 404 {
		t.Errorf("unknown control path: %d", res.status)
	}
	if res := control("POST", "/_sandbox/reset", ""); res.status != 204 {
		t.Errorf("reset: %d", res.status)
	}
	for k, n := range f.srv.Counts() {
		if n != 0 {
			t.Errorf("%d %s after reset", n, k)
		}
	}
	// The control endpoint is not in the request log, and the token
	// survived the reset.
	f.must(200, "GET", "/v3/content", nil)
	if got := f.srv.Requests(); len(got) != 1 || got[0].Path != "/v3/content" {
		t.Errorf("request log after reset %+v", got)
	}
}

func TestFaultsJSON(t *testing.T) {
	t.Parallel()
	in := Faults{Latency: 1500 * time.Millisecond, ErrorRate: 0.1, ErrorCodes: []int{500}, RateLimit: 2.5, CommitThenFail: 1, Seed: 42}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"latency":"1.5s"`) {
		t.Errorf("JSON %s", b)
	}
	var out Faults
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, out); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
}

func TestFlags(t *testing.T) {
	t.Parallel()
	data := t.TempDir() + "/state.json"
	var o Options
	o.FromEnv(func(k string) string {
		return map[string]string{EnvClientID: "env-id", EnvClientSecret: "env-secret"}[k]
	})
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	var usage strings.Builder
	fs.SetOutput(&usage)
	o.RegisterFlags(fs)
	err := fs.Parse([]string{
		"--data", data, "--token-lifetime", "5m", "--latency", "20ms", "--error-rate", "0.2",
		"--error-codes", "500, 502", "--rate-limit", "10", "--rate-burst", "3", "--commit-then-fail", "1", "--fault-seed", "5",
		"--style", "loose",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		Addr: DefaultAddr, DataFile: data, ClientID: "env-id", ClientSecret: "env-secret",
		TokenLifetime: 5 * time.Minute, ReplyToDomain: DefaultReplyToDomain, Style: StyleLoose,
		Faults: Faults{Latency: 20 * time.Millisecond, ErrorRate: 0.2, ErrorCodes: []int{500, 502}, RateLimit: 10, RateBurst: 3, CommitThenFail: 1, Seed: 5},
	}
	if d := cmp.Diff(want, o); d != "" {
		t.Errorf("options (-want +got):\n%s", d)
	}
	fs.PrintDefaults()
	if strings.Contains(usage.String(), "env-secret") {
		t.Errorf("usage shows the secret:\n%s", usage.String())
	}
	if !strings.Contains(usage.String(), "-addr") || !strings.Contains(usage.String(), "127.0.0.1:8089") {
		t.Errorf("usage lacks --addr and its default:\n%s", usage.String())
	}
	srv, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if d := cmp.Diff(want.Faults, srv.Faults()); d != "" {
		t.Errorf("faults from flags (-want +got):\n%s", d)
	}

	for _, args := range [][]string{{"--error-codes", "5xx"}, {"--client-secret", ""}, {"--latency", "fast"}} {
		var o Options
		fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.RegisterFlags(fs)
		if err := fs.Parse(args); err == nil {
			t.Errorf("%v parsed", args)
		}
	}
	for _, o := range []Options{
		{Faults: Faults{ErrorRate: 1.5}},
		{Faults: Faults{ErrorCodes: []int{200}}},
		{TokenLifetime: -time.Second},
		{ReplyToDomain: "me@example.com"},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
	if err := srv.SetFaults(Faults{CommitThenFail: 2}); err == nil {
		t.Error("SetFaults accepted a rate of 2")
	}
}
