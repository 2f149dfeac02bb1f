package main

import (
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionOf(t *testing.T) {
	t.Parallel()
	vcs := func(rev, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified},
		}}
	}
	tests := []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		want   string
	}{
		{"linker flag wins", "v1.4.0", vcs("0123456789abcdef0123", "false"), "v1.4.0"},
		{"go install module@version", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"a clean checkout", "", vcs("0123456789abcdef0123", "false"), "0123456789ab"},
		{"a checkout with changes", "", vcs("0123456789abcdef0123", "true"), "0123456789ab-dirty"},
		{"no vcs stamp (-buildvcs=false)", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"no build info", "", nil, "dev"},
	}
	for _, tt := range tests {
		if got := versionOf(tt.linked, tt.bi); got != tt.want {
			t.Errorf("%s: versionOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestVersionFromTheBuild runs a binary built with -ldflags -X, as the
// Makefile and the Dockerfile build it.
func TestVersionFromTheBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary: skipped with -short")
	}
	t.Parallel()
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"--version", "version"} {
		out, err := exec.Command(bin, arg).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "feedworker "+e2eVersion {
			t.Errorf("feedworker %s: %v, %q; want %q", arg, err, out, "feedworker "+e2eVersion)
		}
	}
}
