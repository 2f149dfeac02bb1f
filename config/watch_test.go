package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/feedworker/feedworker/internal/syncbuf"
)

// waitLimit bounds every wait for the watcher; it is generous because a
// loaded CI machine can be slow, and only reached when a test fails.
const waitLimit = 10 * time.Second

// feedsConfig is a valid file with the given feed ids.
func feedsConfig(ids ...string) string {
	var b strings.Builder
	b.WriteString(head + "feeds:\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "  - id: %s\n    url: https://example.com/%s.xml\n", id, id)
	}
	return b.String()
}

func ids(cfg *Config) []string {
	var out []string
	for _, f := range cfg.Feeds {
		out = append(out, f.ID)
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// watched is a running Watcher and what it reported.
type watched struct {
	w        *Watcher
	changes  chan *Config
	invalids chan error
	logs     *syncbuf.Buffer
}

// startWatcher loads path, starts a Watcher on it and stops it at the end
// of the test.
func startWatcher(t *testing.T, path string, debounce time.Duration) *watched {
	t.Helper()
	cfg, err := testLoader(nil).Load(path)
	if err != nil {
		t.Fatal(err)
	}
	wd := &watched{changes: make(chan *Config, 16), invalids: make(chan error, 16), logs: &syncbuf.Buffer{}}
	wd.w, err = NewWatcher(cfg, WatchOptions{
		Loader:    testLoader(nil),
		Logger:    slog.New(slog.NewTextHandler(wd.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnChange:  func(c *Config) { wd.changes <- c },
		OnInvalid: func(err error) { wd.invalids <- err },
		Debounce:  debounce,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wd.w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitLimit):
			t.Error("Run did not return after its context was cancelled")
		}
	})
	return wd
}

// nextChange waits for OnChange and returns its config's feed ids. A
// refused version on the way is skipped: os.WriteFile truncates before it
// writes, and a slow machine may let the watcher read the empty file.
func (wd *watched) nextChange(t *testing.T) []string {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case c := <-wd.changes:
			return ids(c)
		case err := <-wd.invalids:
			t.Logf("skipping a refused version: %v", err)
		case <-deadline:
			t.Fatalf("no change within %v; log:\n%s", waitLimit, wd.logs)
		}
	}
}

// nextInvalid waits for OnInvalid with an error that match accepts,
// skipping others (a half-written file), and fails on any change.
func (wd *watched) nextInvalid(t *testing.T, match func(error) bool) error {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case err := <-wd.invalids:
			if match(err) {
				return err
			}
			t.Logf("skipping a refused version: %v", err)
		case c := <-wd.changes:
			t.Fatalf("an invalid file was applied: %v", ids(c))
		case <-deadline:
			t.Fatalf("the invalid file was not reported within %v; log:\n%s", waitLimit, wd.logs)
		}
	}
}

func wantIDs(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("feeds: got %v, want %v", got, want)
	}
}

func TestWatcherWrite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "feeds.yaml")
	writeFile(t, path, feedsConfig("a"))
	wd := startWatcher(t, path, 20*time.Millisecond)

	writeFile(t, path, feedsConfig("a", "b"))
	wantIDs(t, wd.nextChange(t), "a", "b")
	wantIDs(t, ids(wd.w.Current()), "a", "b")
}

func TestWatcherRename(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "feeds.yaml")
	writeFile(t, path, feedsConfig("a"))
	wd := startWatcher(t, path, 20*time.Millisecond)

	// How editors save: write a new file, rename it over the old one.
	tmp := filepath.Join(dir, ".feeds.yaml.swp")
	writeFile(t, tmp, feedsConfig("c"))
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, wd.nextChange(t), "c")
}

func TestWatcherSymlinkSwap(t *testing.T) {
	t.Parallel()
	// The layout of a Kubernetes ConfigMap volume: feeds.yaml links to
	// ..data/feeds.yaml and an update swaps the ..data link.
	dir := t.TempDir()
	version := func(name, content string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name, "feeds.yaml"), content)
	}
	version("..v1", feedsConfig("a"))
	if err := os.Symlink("..v1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "feeds.yaml")
	if err := os.Symlink("..data/feeds.yaml", path); err != nil {
		t.Fatal(err)
	}
	wd := startWatcher(t, path, 20*time.Millisecond)

	version("..v2", feedsConfig("a", "k8s"))
	if err := os.Symlink("..v2", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "..v1")); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, wd.nextChange(t), "a", "k8s")
}

func TestWatcherRefusesInvalidFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "feeds.yaml")
	writeFile(t, path, feedsConfig("a"))
	wd := startWatcher(t, path, 20*time.Millisecond)
	old := wd.w.Current()

	writeFile(t, path, feedsConfig("a", "a"))
	err := wd.nextInvalid(t, func(err error) bool { return strings.Contains(fmt.Sprint(err), "duplicate feed id") })
	var probs *Problems
	if !errors.As(err, &probs) {
		t.Fatalf("OnInvalid: got %T, want a *Problems", err)
	}
	// OnChange would have been called before OnInvalid, from the same goroutine.
	if len(wd.changes) != 0 {
		t.Error("OnChange was called for an invalid file")
	}
	if wd.w.Current() != old {
		t.Error("the running config was replaced by an invalid one")
	}
	if logs := wd.logs.String(); !strings.Contains(logs, `feeds.yaml:7: feeds[1].id: duplicate feed id`) ||
		!strings.Contains(logs, "config reload refused") {
		t.Errorf("the problems were not logged with their lines:\n%s", logs)
	}

	// A removed file is refused the same way; the watcher keeps going.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	wd.nextInvalid(t, func(err error) bool { return errors.Is(err, os.ErrNotExist) })
	writeFile(t, path, feedsConfig("b"))
	wantIDs(t, wd.nextChange(t), "b")
}

func TestWatcherDebounce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "feeds.yaml")
	writeFile(t, path, feedsConfig("a"))
	// Far longer than five writes take, so they are one burst.
	wd := startWatcher(t, path, 500*time.Millisecond)

	for i := 1; i <= 5; i++ {
		writeFile(t, path, feedsConfig(fmt.Sprintf("v%d", i)))
	}
	// Had any write of the burst been loaded on its own, its version would
	// come first: changes are delivered in order.
	wantIDs(t, wd.nextChange(t), "v5")
	writeFile(t, path, feedsConfig("v6"))
	wantIDs(t, wd.nextChange(t), "v6")
}

func TestWatcherReloadOnDemand(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "feeds.yaml")
	writeFile(t, path, feedsConfig("a"))
	// A debounce longer than the test: only Reload can load the file.
	wd := startWatcher(t, path, time.Hour)

	writeFile(t, path, feedsConfig("b"))
	wd.w.Reload()
	wd.w.Reload() // does not block: merged with the pending one, or a no-op after it
	wantIDs(t, wd.nextChange(t), "b")
}

// TestWatcherReloadSteps calls reload directly, without Run, to check
// without any timing what each outcome does.
func TestWatcherReloadSteps(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "feeds.yaml")
	writeFile(t, path, feedsConfig("a"))
	cfg, err := testLoader(nil).Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var changes []*Config
	var invalid []error
	var logs syncbuf.Buffer
	w, err := NewWatcher(cfg, WatchOptions{
		Loader:    testLoader(nil),
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
		OnChange:  func(c *Config) { changes = append(changes, c) },
		OnInvalid: func(err error) { invalid = append(invalid, err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.fsw.Close()

	writeFile(t, path, "# only a comment moves the lines\n"+feedsConfig("a"))
	w.reload()
	if len(changes) != 0 || len(invalid) != 0 || w.Current() != cfg {
		t.Errorf("same settings: got %d changes, %d refusals", len(changes), len(invalid))
	}

	writeFile(t, path, feedsConfig("a", "b"))
	w.reload()
	if len(changes) != 1 || w.Current() != changes[0] {
		t.Fatalf("new settings: got %d changes", len(changes))
	}
	wantIDs(t, ids(changes[0]), "a", "b")
	if !strings.Contains(logs.String(), `msg="config reloaded"`) || !strings.Contains(logs.String(), "added=[b]") {
		t.Errorf("the reload was not logged with its diff:\n%s", logs.String())
	}

	writeFile(t, path, "feeds: {")
	w.reload()
	if len(changes) != 1 || len(invalid) != 1 || w.Current() != changes[0] {
		t.Errorf("broken file: got %d changes, %d refusals", len(changes), len(invalid))
	}
}

func TestWatcherSecretFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secretDir := filepath.Join(dir, "secrets")
	if err := os.Mkdir(secretDir, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(secretDir, "client_secret")
	writeFile(t, secret, "first")
	path := filepath.Join(dir, "feeds.yaml")
	writeFile(t, path, `api:
  base_url: https://api.example.com
  token_url: https://api.example.com/oauth/token
  client_id: id
  client_secret_file: secrets/client_secret
`)
	wd := startWatcher(t, path, 20*time.Millisecond)

	writeFile(t, secret, "rotated\n")
	select {
	case c := <-wd.changes:
		if c.API.ClientSecret != "rotated" {
			t.Errorf("client secret: got %q, want the rotated one", c.API.ClientSecret)
		}
	case <-time.After(waitLimit):
		t.Fatalf("a rotated secret was not picked up; log:\n%s", wd.logs)
	}
}

func TestTrackerRelevant(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "feeds.yaml")
	writeFile(t, path, "x")
	link := filepath.Join(dir, "linked.yaml")
	if err := os.Symlink("feeds.yaml", link); err != nil {
		t.Fatal(err)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer fsw.Close()
	tr := &tracker{fsw: fsw, log: slog.New(slog.DiscardHandler), dirs: map[string]bool{}, targets: map[string]string{}}
	if err := tr.follow([]string{path, link}); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "feedworker.db")
	tests := []struct {
		name string
		ev   fsnotify.Event
		want bool
	}{
		{"write to the file", fsnotify.Event{Name: path, Op: fsnotify.Write}, true},
		{"chmod of the file", fsnotify.Event{Name: path, Op: fsnotify.Chmod}, true},
		{"rename onto the file", fsnotify.Event{Name: path, Op: fsnotify.Create}, true},
		{"write to a database next to it", fsnotify.Event{Name: other, Op: fsnotify.Write}, false},
		{"new unrelated file", fsnotify.Event{Name: other, Op: fsnotify.Create}, false},
	}
	for _, tt := range tests {
		if got := tr.relevant(tt.ev); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
	// The link now points elsewhere: a directory change is relevant.
	writeFile(t, filepath.Join(dir, "other.yaml"), "y")
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("other.yaml", link); err != nil {
		t.Fatal(err)
	}
	if !tr.relevant(fsnotify.Event{Name: filepath.Join(dir, "..data"), Op: fsnotify.Create}) {
		t.Error("a symlink swap is not relevant")
	}
	if tr.relevant(fsnotify.Event{Name: other, Op: fsnotify.Write}) {
		t.Error("a write elsewhere is relevant")
	}
}

func TestNewWatcherErrors(t *testing.T) {
	t.Parallel()
	on := func(*Config) {}
	if _, err := NewWatcher(nil, WatchOptions{OnChange: on}); err == nil {
		t.Error("NewWatcher(nil): no error")
	}
	cfg := mustParse(t, head, nil) // File is "feeds.yaml" in the working directory
	if _, err := NewWatcher(cfg, WatchOptions{}); err == nil {
		t.Error("NewWatcher without OnChange: no error")
	}
	cfg.File = filepath.Join(t.TempDir(), "missing-dir", "feeds.yaml")
	if _, err := NewWatcher(cfg, WatchOptions{OnChange: on}); err == nil {
		t.Error("NewWatcher on a directory that does not exist: no error")
	}

	path := filepath.Join(t.TempDir(), "feeds.yaml")
	writeFile(t, path, head)
	cfg, err := testLoader(nil).Load(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWatcher(cfg, WatchOptions{OnChange: on})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx); err != nil {
		t.Errorf("Run with a cancelled context: got %v, want nil", err)
	}
	if err := w.Run(ctx); err == nil {
		t.Error("a second Run: no error")
	}
}
