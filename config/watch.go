package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long a watched file must stay quiet before it is
// reloaded, when WatchOptions.Debounce is zero.
const DefaultDebounce = 250 * time.Millisecond

// WatchOptions configure a Watcher.
type WatchOptions struct {
	// Loader loads each new version of the file. Its Check is how the
	// caller refuses versions it could not run (bad expressions).
	Loader Loader
	// Logger receives the reload outcomes; nil discards them.
	Logger *slog.Logger
	// OnChange is called with each valid version of the file that differs
	// from the running one, from Run's goroutine, one call at a time.
	// Required.
	OnChange func(*Config)
	// OnInvalid, when set, is called with the error of each refused
	// version (a *Problems, or the error reading the file), for example
	// to count it in a metric. The problems are logged already.
	OnInvalid func(error)
	// Debounce is how long the file must stay quiet before it is reloaded
	// (DefaultDebounce when zero): an editor's save or a ConfigMap update
	// is a burst of several events, and a half-written file must not be
	// loaded.
	Debounce time.Duration
}

// Watcher reloads a configuration file when it changes on disk or when
// Reload is called (on SIGHUP, say), and hands each valid new version to
// OnChange. A version that does not load is refused with its problems
// logged, and the running one stays.
//
// It watches directories, not files: editors save by writing a new file
// and renaming it over the old one, and Kubernetes updates a mounted
// ConfigMap or Secret by swapping a symlink, and a watch on the file
// itself would see neither. The directories watched are those of the
// configuration file and of the files named by client_secret_file and
// token_file, so a rotated secret is picked up too.
type Watcher struct {
	path     string
	opts     WatchOptions
	log      *slog.Logger
	fsw      *fsnotify.Watcher
	tracker  *tracker
	trigger  chan struct{}
	runOnce  sync.Once
	mu       sync.Mutex
	current  *Config
	debounce time.Duration
}

// NewWatcher starts watching the file current was loaded from, with
// current as the running version. Run must then be called, once: it
// delivers the changes and releases the watch when it returns.
func NewWatcher(current *Config, opts WatchOptions) (*Watcher, error) {
	if current == nil || current.File == "" {
		return nil, errors.New("watch config: need a configuration loaded from a file")
	}
	if opts.OnChange == nil {
		return nil, errors.New("watch config: OnChange is required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch config: %w", err)
	}
	w := &Watcher{
		path:     current.File,
		opts:     opts,
		log:      log,
		fsw:      fsw,
		trigger:  make(chan struct{}, 1),
		current:  current,
		debounce: opts.Debounce,
	}
	if w.debounce <= 0 {
		w.debounce = DefaultDebounce
	}
	w.tracker = &tracker{fsw: fsw, log: log, dirs: map[string]bool{}, targets: map[string]string{}}
	if err := w.tracker.follow(watchedFiles(current)); err != nil {
		fsw.Close()
		return nil, fmt.Errorf("watch config: %w", err)
	}
	return w, nil
}

// Current returns the running configuration: the last valid version.
func (w *Watcher) Current() *Config {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.current
}

// Reload asks Run to reload the file now, without waiting for a change on
// disk. It does not block; requests made while one is pending are merged.
func (w *Watcher) Reload() {
	select {
	case w.trigger <- struct{}{}:
	default:
	}
}

// Run delivers changes until ctx is done, then releases the watch and
// returns nil. It returns an error if it is called twice or the file
// system watch fails for good.
func (w *Watcher) Run(ctx context.Context) error {
	first := false
	w.runOnce.Do(func() { first = true })
	if !first {
		return errors.New("watch config: Run called twice")
	}
	defer w.fsw.Close()

	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return errors.New("watch config: file system watch closed")
			}
			if w.tracker.relevant(ev) {
				quiet.Reset(w.debounce)
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return errors.New("watch config: file system watch closed")
			}
			// Typically an overflowed event queue: reload, since an
			// event about the file may have been lost.
			w.log.Warn("config watch error; reloading to be safe", "file", w.path, "error", err)
			quiet.Reset(w.debounce)
		case <-quiet.C:
			w.reload()
		case <-w.trigger:
			quiet.Stop()
			w.reload()
		}
	}
}

// reload loads the file and, if it is valid and means something new,
// makes it current and calls OnChange.
func (w *Watcher) reload() {
	prev := w.Current()
	next, err := w.opts.Loader.Load(w.path)
	if err != nil {
		w.refuse(err)
		w.follow(prev)
		return
	}
	w.follow(next)
	if equal(prev, next) {
		w.log.Debug("config file touched, settings unchanged", "file", w.path)
		return
	}
	added, removed, changed := Diff(prev, next)
	w.mu.Lock()
	w.current = next
	w.mu.Unlock()
	w.log.Info("config reloaded", "file", w.path, "added", added, "removed", removed, "changed", changed)
	w.opts.OnChange(next)
}

func (w *Watcher) follow(cfg *Config) {
	if err := w.tracker.follow(watchedFiles(cfg)); err != nil {
		w.log.Warn("config watch incomplete", "file", w.path, "error", err)
	}
}

func (w *Watcher) refuse(err error) {
	var probs *Problems
	if errors.As(err, &probs) {
		for _, p := range probs.List {
			w.log.Error("config problem", "problem", p.String())
		}
		w.log.Error("config reload refused; the running config stays", "file", w.path, "problems", len(probs.List))
	} else {
		w.log.Error("config reload refused; the running config stays", "file", w.path, "error", err)
	}
	if w.opts.OnInvalid != nil {
		w.opts.OnInvalid(err)
	}
}

// watchedFiles are the absolute paths whose content makes up cfg.
func watchedFiles(cfg *Config) []string {
	var files []string
	for _, f := range []string{cfg.File, cfg.API.ClientSecretFile, cfg.API.TokenFile} {
		if f == "" {
			continue
		}
		if abs, err := filepath.Abs(f); err == nil {
			files = append(files, abs)
		}
	}
	return files
}

// tracker keeps the directory watches in line with the watched files and
// decides which events concern them. Only Run's goroutine (and NewWatcher,
// before it) uses it.
type tracker struct {
	fsw  *fsnotify.Watcher
	log  *slog.Logger
	dirs map[string]bool
	// targets maps each watched file to what it resolved to through
	// symlinks at the last load ("" if it did not exist).
	targets map[string]string
}

// follow watches the directories of files and no others. Failing to watch
// the first file's directory (the configuration's) is an error; a secret's
// directory that cannot be watched is only logged, since SIGHUP still
// reloads it.
func (t *tracker) follow(files []string) error {
	want := map[string]bool{}
	t.targets = map[string]string{}
	var err error
	for i, f := range files {
		t.targets[f] = resolve(f)
		dir := filepath.Dir(f)
		want[dir] = true
		if t.dirs[dir] {
			continue
		}
		if e := t.fsw.Add(dir); e != nil {
			if i == 0 {
				err = e
			} else {
				t.log.Warn("cannot watch a secret's directory; use SIGHUP after changing it", "dir", dir, "error", e)
			}
			continue
		}
		t.dirs[dir] = true
	}
	for dir := range t.dirs {
		if !want[dir] {
			_ = t.fsw.Remove(dir) // the directory may be gone already
			delete(t.dirs, dir)
		}
	}
	return err
}

// relevant reports whether ev may have changed a watched file: an event on
// the file itself, or a change in the directory that makes it resolve to
// another file (Kubernetes swapping its ..data symlink). Writes to other
// files, such as a database next to the configuration, are ignored.
func (t *tracker) relevant(ev fsnotify.Event) bool {
	name := filepath.Clean(ev.Name)
	if _, ok := t.targets[name]; ok {
		return true
	}
	if !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Remove) && !ev.Has(fsnotify.Rename) {
		return false
	}
	for f, target := range t.targets {
		if resolve(f) != target {
			return true
		}
	}
	return false
}

// resolve returns the file path points to through symlinks, or "" if
// there is none.
func resolve(path string) string {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	return p
}
