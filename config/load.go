package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Loader loads configuration files. The zero value reads the process
// environment; Load and Parse use it.
type Loader struct {
	// LookupEnv resolves ${VAR} references; nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// Version goes into the default http.user_agent; empty means the main
	// module's version from the build information ("dev" if there is none).
	Version string
	// Check, when set, runs after the built-in checks on the loaded
	// configuration (defaults applied, feeds resolved) and adds its own
	// problems, with problems.Add(cfg, "feeds[2].type_rules[0].when", msg),
	// so that they are reported in the same list, with file and line, and
	// refuse a reload the same way. It runs whenever the file is valid
	// YAML, even when the built-in checks found problems, so that one run
	// reports everything; it must not assume the configuration is valid.
	Check func(cfg *Config, problems *Problems)
}

// Load reads, expands, completes and validates the configuration file at
// path. See Loader.Load.
func Load(path string) (*Config, error) { return Loader{}.Load(path) }

// Parse is Load for a file already in memory. See Loader.Parse.
func Parse(name string, data []byte) (*Config, error) { return Loader{}.Parse(name, data) }

// Load reads the file at path and parses it. An error reading the file is
// returned wrapped (errors.Is(err, fs.ErrNotExist) works); anything wrong
// in its content is a *Problems.
func (l Loader) Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return l.parse(path, data)
}

// Parse parses data as the configuration file name: name appears in
// problems and relative secret file paths are relative to its directory.
// On success every feed's settings are fully resolved. Otherwise the error
// is a *Problems listing everything wrong, and the Config is nil.
func (l Loader) Parse(name string, data []byte) (*Config, error) {
	// The config keeps the text for its line index: the caller's slice
	// may change after Parse returns.
	return l.parse(name, bytes.Clone(data))
}

// parse is Parse of data that nothing else changes afterwards.
func (l Loader) parse(name string, data []byte) (*Config, error) {
	lookup := l.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	version := l.Version
	if version == "" {
		version = buildVersion()
	}
	probs := &Problems{}
	cfg := &Config{File: name}

	root, err := parseYAML(name, data, probs)
	if err != nil {
		return nil, err
	}
	d := newDecoder(name, lookup, probs)
	if root != nil {
		d.budget = aliasBudget(root)
		d.decode(root, reflect.ValueOf(cfg).Elem(), "")
		if d.broken[""] {
			// Not a mapping at all: checking keys it cannot have would
			// only bury the one problem.
			return nil, probs.Err()
		}
	}
	cfg.lines = &lineIndex{m: d.lines}

	readSecrets(cfg, probs)
	resolveFileURLs(cfg)
	def := builtin(version)
	storeDefaults(&def, cfg.Redis)
	applySectionDefaults(cfg, def, d.set)
	fitInterval(&def.Defaults, cfg.HTTP)
	inherit(&cfg.Defaults, def.Defaults)
	validate(cfg, probs, d.broken)
	for i := range cfg.Feeds {
		inherit(&cfg.Feeds[i].FeedSettings, cfg.Defaults)
	}
	if l.Check != nil {
		l.Check(cfg, probs)
	}
	if err := probs.Err(); err != nil {
		return nil, err
	}
	// Every problem is found by now, with its line: what stays is the
	// text, the map is rebuilt if a line is asked for later.
	cfg.lines = &lineIndex{file: name, src: data}
	return cfg, nil
}

// yamlErrLine matches the line yaml.v3 puts in its syntax errors.
var yamlErrLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML returns the root node of the file's only document, nil for an
// empty file, or a *Problems for a syntax error or a second document.
func parseYAML(name string, data []byte, probs *Problems) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		probs.List = append(probs.List, syntaxProblem(name, data, err))
		return nil, probs.Err()
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		probs.List = append(probs.List, syntaxProblem(name, data, err))
		return nil, probs.Err()
	default:
		probs.at(name, next.Line, "", "a second YAML document: the file must hold exactly one")
		return nil, probs.Err()
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// yamlUnknownAnchor matches the one syntax error yaml.v3 gives no line.
var yamlUnknownAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)

// syntaxProblem turns a yaml.v3 syntax error into a Problem at its line.
func syntaxProblem(name string, data []byte, err error) Problem {
	msg := err.Error()
	if m := yamlErrLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		// yaml.v3 counts lines from 1 for scanner errors but from 0 for
		// parser errors, whose messages are these; TestSyntaxErrorLines
		// notices if a new release changes that.
		if strings.HasPrefix(m[2], "did not find expected") || strings.HasPrefix(m[2], "found duplicate %") ||
			m[2] == "found incompatible YAML document" || m[2] == "found undefined tag handle" {
			line++
		}
		return Problem{File: name, Line: line, Msg: "invalid YAML: " + m[2]}
	}
	if m := yamlUnknownAnchor.FindStringSubmatch(msg); m != nil {
		for i, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, "*"+m[1]) {
				return Problem{File: name, Line: i + 1, Msg: "invalid YAML: unknown anchor *" + m[1]}
			}
		}
	}
	return Problem{File: name, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// readSecrets replaces client_secret_file and token_file by the trimmed
// content of the files they name. Relative paths are relative to the
// configuration file's directory, because that is where an operator puts
// them next to it, whatever the worker's working directory is; the field
// keeps the resolved path so the watcher can watch it.
func readSecrets(cfg *Config, probs *Problems) {
	dir := filepath.Dir(cfg.File)
	read := func(file *string, value *string, fileKey, valueKey string) {
		if *file == "" {
			return
		}
		if *value != "" {
			probs.Add(cfg, "api."+fileKey, fmt.Sprintf("set %s or %s, not both", valueKey, fileKey))
			return
		}
		if !filepath.IsAbs(*file) {
			*file = filepath.Join(dir, *file)
		}
		b, err := os.ReadFile(*file)
		if err != nil {
			probs.Add(cfg, "api."+fileKey, fmt.Sprintf("read secret: %v", err))
			return
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			probs.Add(cfg, "api."+fileKey, fmt.Sprintf("secret file %s is empty", *file))
			return
		}
		*value = s
	}
	read(&cfg.API.ClientSecretFile, &cfg.API.ClientSecret, "client_secret_file", "client_secret")
	read(&cfg.API.TokenFile, &cfg.API.Token, "token_file", "token")
	readRedisPassword(cfg, probs)
}

// feedPath splits a path inside one feed into the feed ("feeds[2]"), the
// rest ("type_rules[0].when") and the setting's key ("type_rules").
var feedPath = regexp.MustCompile(`^(feeds\[\d+\])\.(([^.\[]+).*)$`)

// Line returns the line in File of the field path (such as
// "feeds[3].type_rules[0].when"), or 0 when nothing of it is in the file.
// See Problem for how a path the file does not hold is placed.
func (c *Config) Line(field string) int {
	_, line := c.locate(field)
	return line
}

// locate finds where the value at field was written. A feed setting the
// feed does not set itself comes from the defaults section when that sets
// it: the result then names it there ("defaults.type_rules[0].when"), so
// that a problem in an inherited value is reported once, where it can be
// fixed. Anything else not in the file falls back to its nearest parent.
func (c *Config) locate(field string) (string, int) {
	if c == nil {
		return field, 0
	}
	if m := feedPath.FindStringSubmatch(field); m != nil {
		feed, rest, key := m[1], m[2], m[3]
		if _, own := c.lines.get()[feed+"."+key]; !own {
			if line := c.lineWithin("defaults."+rest, "defaults."+key); line > 0 {
				return "defaults." + rest, line
			}
		}
	}
	return field, c.lineWithin(field, "")
}

// lineWithin returns the line of p or of its nearest parent in the file,
// not going above floor.
func (c *Config) lineWithin(p, floor string) int {
	lines := c.lines.get()
	for ; p != "" && len(p) >= len(floor); p = parentPath(p) {
		if l, ok := lines[p]; ok {
			return l
		}
	}
	return 0
}

// parentPath strips the last key or index from a field path.
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// Problem returns a Problem on field, at its line in the file. A feed
// setting that the feed inherits from the defaults section is reported
// there: a problem on "feeds[2].type_rules[0].when" when only defaults
// sets type_rules becomes one on "defaults.type_rules[0].when", at that
// line. A field the file does not hold gets its nearest parent's line.
func (c *Config) Problem(field, msg string) Problem {
	if c == nil {
		return Problem{Field: field, Msg: msg}
	}
	field, line := c.locate(field)
	return Problem{File: c.File, Line: line, Field: field, Msg: msg}
}

// Embedded reports whether the API is the sandbox started in-process.
func (a API) Embedded() bool { return a.BaseURL == EmbeddedAPI }

// EmbeddedAPI is the api.base_url that starts the local sandbox in-process.
const EmbeddedAPI = "embedded"

// Auth names how the worker authenticates to the API: "token", "client
// credentials" or "none".
func (a API) Auth() string {
	switch {
	case a.Token != "":
		return "token"
	case a.ClientID != "" || a.ClientSecret != "" || a.TokenURL != "":
		return "client credentials"
	default:
		return "none"
	}
}

// Summary is a one-line description of a loaded configuration, for
// `feedworker validate` to print on success. It holds no secret.
func (c *Config) Summary() string {
	enabled := 0
	for _, f := range c.Feeds {
		if f.Enabled == nil || *f.Enabled {
			enabled++
		}
	}
	store := "embedded " + c.Store.Path
	if c.Redis.Enabled() {
		store = "redis " + c.Redis.Describe()
	}
	return fmt.Sprintf("%s: %d %s (%d enabled), api %s (%s), store %s",
		c.File, len(c.Feeds), plural(len(c.Feeds), "feed", "feeds"), enabled,
		RedactURL(c.API.BaseURL), c.API.Auth(), store)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// resolveFileURLs makes relative file URLs ("file:feeds/a.xml") absolute,
// relative to the config file's directory, so that a config and the local
// feeds beside it work from any working directory.
func resolveFileURLs(cfg *Config) {
	dir := filepath.Dir(cfg.File)
	for i := range cfg.Feeds {
		rest, ok := strings.CutPrefix(cfg.Feeds[i].URL, "file:")
		if !ok || rest == "" || strings.HasPrefix(rest, "/") {
			continue
		}
		abs, err := filepath.Abs(filepath.Join(dir, filepath.FromSlash(rest)))
		if err != nil {
			continue // left as written: validation reports it
		}
		cfg.Feeds[i].URL = (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	}
}
