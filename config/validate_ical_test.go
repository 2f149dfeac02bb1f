package config

import "testing"

// TestValidationICal checks format and the ical keys, each with its line.
func TestValidationICal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      []string
	}{
		{"format unknown", head + feed + "    format: ics\n", []string{`7: feeds[0].format: unknown format "ics" (want auto, feed or ical)`}},
		{"format ok", head + feed + "    format: ical\n    type: event\n", nil},
		{"format ical with story", head + feed + "    format: ical\n    type: story\n", []string{`8: feeds[0].type: an ical feed publishes events`}},
		{"window zero", head + feed + "    ical:\n      window: 0s\n", []string{"8: feeds[0].ical.window: must be greater than zero"}},
		{"window negative", head + feed + "    ical:\n      window: -1h\n", []string{"8: feeds[0].ical.window: invalid duration"}},
		{"window back zero ok", head + feed + "    ical:\n      window_back: 0s\n", nil},
		{"on_cancel unknown", head + feed + "    ical:\n      on_cancel: ignore\n", []string{`8: feeds[0].ical.on_cancel: unknown value "ignore" (want delete or keep)`}},
		{"initial_past not bool", head + feed + "    ical:\n      initial_past: sometimes\n", []string{"8: feeds[0].ical.initial_past:"}},
		{"websub public_url", head + "websub:\n  public_url: hub.example\n", []string{`5: websub.public_url: not an absolute http(s) URL`}},
		{"websub public_url query", head + "websub:\n  public_url: https://w.example/cb?x=1\n", []string{"5: websub.public_url: must not have a query"}},
		{"websub listen", head + "websub:\n  listen: 8091\n", []string{`5: websub.listen: want host:port (such as :8091), got "8091"`}},
		{"websub listen clash", head + "admin:\n  listen: 127.0.0.1:9090\nwebsub:\n  public_url: https://w.example/cb\n  listen: :9090\n", []string{`8: websub.listen: ":9090" is admin.listen too`}},
		{"websub lease", head + "websub:\n  lease: 30s\n", []string{"5: websub.lease: must be at least 1m"}},
		{"websub lease long", head + "websub:\n  lease: 400d\n", []string{"5: websub.lease: must be at most 365d"}},
		{"websub fallback", head + "websub:\n  fallback_interval: 0s\n", []string{"5: websub.fallback_interval: must be greater than zero"}},
		{"websub ok", head + "websub:\n  public_url: https://w.example/websub\n  listen: 0.0.0.0:8091\n", nil},
		{"defaults checked", head + "defaults:\n  ical:\n    on_cancel: drop\n  format: rss\n" + feed,
			[]string{`6: defaults.ical.on_cancel: unknown value "drop"`, `7: defaults.format: unknown format "rss"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.want == nil {
				mustParse(t, tt.src, nil)
				return
			}
			wantProblems(t, tt.src, nil, tt.want...)
		})
	}
}

// TestICalInheritsKeyByKey: a feed that sets one ical key keeps the
// others from the defaults section and the built-in defaults.
func TestICalInheritsKeyByKey(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, head+"defaults:\n  ical:\n    window: 30d\n"+feed+"    ical:\n      on_cancel: keep\n", nil)
	ic := cfg.Feeds[0].ICal
	if ic.Window == nil || ic.Window.D().Hours() != 30*24 || ic.WindowBack == nil || ic.WindowBack.D().Hours() != 24 ||
		ic.OnCancel == nil || *ic.OnCancel != "keep" || ic.InitialPast == nil || *ic.InitialPast {
		t.Errorf("feed ical = %+v, want window 30d (defaults), window_back 1d (built in), on_cancel keep, initial_past false", ic)
	}
}
