package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
// Makefile and the Dockerfile build it: --version and the running worker's
// feedworker_build_info say that version.
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

	feed, err := filepath.Abs("../../examples/feeds/rome__slashdot.xml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := writeFile(t, dir, "c.yaml", fmt.Sprintf(`api:
  base_url: embedded
store:
  path: %s
admin:
  listen: %s
feeds:
  - id: news
    url: file://%s
    type: link
`, filepath.Join(dir, "s.db"), addr, feed))
	cmd := exec.Command(bin, "run", "--config", cfg, "--log-level", "error")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("the worker stopped with %v", err)
		}
	}()
	want := fmt.Sprintf(`feedworker_build_info{goversion=%q,version=%q} 1`, runtime.Version(), e2eVersion)
	waitUntil(t, "the worker's /metrics", func() (bool, string) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return err == nil && strings.Contains(string(b), want), "want " + want
	})
}
