package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/opml"
	"github.com/feedworker/feedworker/worker"
)

// cmdFeeds runs "feeds import" and "feeds export".
func cmdFeeds(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("want a subcommand: import FILE.opml or export")
	}
	switch args[0] {
	case "import":
		return cmdFeedsImport(ctx, args[1:], stdout, stderr)
	case "export":
		return cmdFeedsExport(ctx, args[1:], stdout, stderr)
	}
	return fmt.Errorf("unknown subcommand %q: want import or export", args[0])
}

// cmdFeedsImport turns an OPML subscription list into feed entries:
// printed, or with --write merged into the config file.
func cmdFeedsImport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("feeds import", stderr)
	path := fs.String("config", "", "the config file whose feeds are checked for duplicates, and --write merges into")
	typ := fs.String("type", "", "content type of the imported feeds: story, link, event or need (default: the config's)")
	fromOutline := fs.Bool("category-from-outline", false, "add the names of the folders (outlines) around a feed as its categories")
	write := fs.Bool("write", false, "merge the feeds into the --config file (comments and order kept) instead of printing them")
	// The file may come before the flags, as the usage shows it.
	var file string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		file, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if file == "" && fs.NArg() > 0 {
		file = fs.Arg(0)
	}
	if file == "" {
		return errors.New("want the OPML file: feeds import FILE.opml")
	}
	if *typ != "" && !slices.Contains(config.ContentTypes(), *typ) {
		return fmt.Errorf("--type %q: want story, link, event or need", *typ)
	}
	if *write && *path == "" {
		return errors.New("--write needs --config, the file to merge into")
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	doc, err := opml.Parse(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}

	var src []byte
	var existing []config.FileFeed
	if *path != "" {
		if src, err = os.ReadFile(*path); err != nil {
			return err
		}
		if existing, err = config.FileFeeds(src); err != nil {
			return fmt.Errorf("%s: %w", *path, err)
		}
	}
	taken := map[string]bool{}
	for _, e := range existing {
		taken[e.ID] = true
	}
	var add []config.NewFeed
	for _, of := range doc.Feeds {
		if dup := duplicateOf(of.XMLURL, existing, add); dup != "" {
			fmt.Fprintf(stderr, "note: %s:%d: %s skipped: %s already has this URL\n", file, of.Line, of.XMLURL, dup)
			continue
		}
		id := config.FeedIDFrom(of.Title)
		if id == "" {
			id = config.FeedIDFrom(strings.TrimPrefix(strings.TrimPrefix(of.XMLURL, "https://"), "http://"))
		}
		if id == "" {
			id = "feed"
		}
		nf := config.NewFeed{ID: config.UniqueFeedID(id, taken), URL: of.XMLURL, Type: *typ}
		for _, c := range of.Categories {
			// A category attribute holds slash paths: the last step names it.
			parts := strings.Split(strings.Trim(c, "/"), "/")
			if leaf := strings.TrimSpace(parts[len(parts)-1]); leaf != "" {
				nf.Categories = append(nf.Categories, leaf)
			}
		}
		if *fromOutline {
			nf.Categories = append(of.Folders, nf.Categories...)
		}
		nf.Categories = compactFold(nf.Categories)
		add = append(add, nf)
	}
	if len(add) == 0 {
		fmt.Fprintln(stderr, "nothing to import: every feed of the file is configured already")
		return nil
	}
	comment := fmt.Sprintf("Imported from %s on %s.", filepath.Base(file), time.Now().UTC().Format(time.DateOnly))
	if !*write {
		var out []byte
		if out, err = yaml.Marshal(add); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "# %s\n%s", comment, out)
		return nil
	}
	merged, err := config.AppendFeeds(src, add, comment)
	if err != nil {
		return fmt.Errorf("%s: %w", *path, err)
	}
	if err := writeFileAtomic(*path, merged); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d feeds added\n", *path, len(add))
	return nil
}

// duplicateOf names the feed that already has url, or "".
func duplicateOf(url string, existing []config.FileFeed, added []config.NewFeed) string {
	for _, e := range existing {
		if config.SameFeedURL(e.URL, url) {
			return "the config's feed " + e.ID
		}
	}
	for _, a := range added {
		if config.SameFeedURL(a.URL, url) {
			return "an earlier outline (" + a.ID + ")"
		}
	}
	return ""
}

// compactFold drops empty names and repeats that differ only in case.
func compactFold(names []string) []string {
	var out []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" && !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, n) }) {
			out = append(out, n)
		}
	}
	return out
}

// writeFileAtomic replaces path with data through a temporary file in the
// same directory, keeping the file's mode: a crash leaves the old file or
// the new one, never half of one.
func writeFileAtomic(path string, data []byte) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, bytes.NewReader(data)); err != nil {
		tmp.Close()
		return err
	}
	if err := errors.Join(tmp.Chmod(fi.Mode().Perm()), tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// cmdFeedsExport prints the configured feeds as OPML 2.0.
func cmdFeedsExport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("feeds export", stderr)
	path := fs.String("config", "", "the config file (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *path == "" {
		return errors.New("--config is required")
	}
	cfg, err := worker.LoadConfig(*path, version)
	if err != nil {
		return err
	}
	var out []opml.Feed
	redacted := 0
	for _, f := range cfg.Feeds {
		// Credentials in a feed URL stay out of a file meant to be shared.
		u := config.RedactURL(f.URL)
		if u != f.URL {
			redacted++
		}
		typ := "rss"
		if f.Format != nil && *f.Format == "ical" {
			typ = "ical"
		}
		out = append(out, opml.Feed{Title: f.ID, XMLURL: u, Type: typ, Categories: f.Categories})
	}
	if redacted > 0 {
		fmt.Fprintf(stderr, "note: credentials in %d feed URLs are replaced by xxxxx\n", redacted)
	}
	return opml.Write(stdout, "feedworker feeds", time.Now(), out)
}
