package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/feedworker/feedworker/acs"
)

// TestQuickstartThroughTheAdminAddress runs the README's quickstart config
// (with its files in a temp folder and a free admin port) and follows the
// README while it runs: content list, the embedded sandbox through the
// admin mount with self links that lead back through it, and the version
// in feedworker_build_info.
func TestQuickstartThroughTheAdminAddress(t *testing.T) {
	t.Parallel()
	feedsDir, err := filepath.Abs("../../examples/feeds")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	doc := strings.NewReplacer(
		".feedworker/", dir+"/",
		"127.0.0.1:9090", addr,
		"file:feeds/", "file:"+feedsDir+"/",
	).Replace(string(src))
	cfg := writeFile(t, dir, "quickstart.yaml", doc)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var out bytes.Buffer // read only after done
	go func() { done <- cmdRun(ctx, []string{"--config", cfg, "--log-level", "error"}, &out, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		if !strings.Contains(out.String(), "published: 4 events, 10 links, 5 stories") {
			t.Errorf("the quickstart's summary differs from the README's:\n%s", out.String())
		}
	})

	waitUntil(t, "content list to show the quickstart's 19 items", func() (bool, string) {
		code, out, errOut := runCLI(t, "content", "list", "--config", cfg, "--log-level", "error")
		return code == 0 && strings.Contains(out, "19 items"), out + errOut
	})

	base := "http://" + addr + "/sandbox"
	hc := acs.ClientCredentials{TokenURL: acs.TokenURL(base), ClientID: "sandbox", ClientSecret: "sandbox-secret"}.HTTPClient(nil)
	get := func(url string) (int, []byte) {
		t.Helper()
		resp, err := hc.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}
	status, body := get(base + "/v3/content?page_size=5")
	var page struct {
		Data []struct {
			ID    int64  `json:"id"`
			Self  string `json:"self"`
			Title string `json:"title"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &page); status != http.StatusOK || err != nil || len(page.Data) == 0 {
		t.Fatalf("GET /sandbox/v3/content: %d %v\n%.500s", status, err, body)
	}
	for _, it := range page.Data {
		if want := fmt.Sprintf("%s/v3/content/%d", base, it.ID); it.Self != want {
			t.Errorf("self link %q, want %q", it.Self, want)
			continue
		}
		if status, body := get(it.Self); status != http.StatusOK || !strings.Contains(string(body), fmt.Sprintf(`"id":%d`, it.ID)) {
			t.Errorf("GET %s (its self link): %d\n%.300s", it.Self, status, body)
		}
	}

	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf(`feedworker_build_info{goversion=%q,version=%q} 1`, runtime.Version(), buildVersion()); !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics lacks %s", want)
	}
}
