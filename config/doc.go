// Package config loads the worker's YAML configuration file: it expands
// environment references, applies defaults, validates everything at once
// with file and line, and watches the file to reload it.
//
// The keys are the yaml tags of the types in schema.go. REFERENCE.md lists
// every key with its type, default, an example and description; it is
// generated from schema.go, the built-in defaults, this comment and
// examples/full.yaml, an annotated configuration that sets every key, by
// `go generate`, and a test fails when it is stale or when a key has no
// example there.
//
// # Values
//
// A value is typed by its key, not by how YAML would read its text:
// interval: "15m" and interval: 15m are the same, initial_items: "10" is a
// number and id: 0123 is the string "0123". Booleans are true or false;
// yes, no, on and off are refused rather than guessed at. A key with no
// value (key:, key: ~ or key: null) is not set, so its default applies,
// while "" is an empty string and is set: admin.listen: "" turns the admin
// endpoint off. Unknown and repeated keys are errors. Anchors, aliases and
// merge keys (<<: *common) work, and top-level keys that start with "x-"
// are ignored, to hold anchors. The file holds one YAML document.
//
// # Environment references
//
// In a value, ${VAR} is replaced by the environment variable VAR and
// ${VAR:-default} by VAR or, when VAR is unset or empty, by the default
// (taken literally, up to the first "}"). $$ is a literal $, and a $
// followed by anything else is kept as it is. An unset ${VAR} without a
// default is an error at its line. A value holding references that
// expands to nothing is not set, so interval: ${POLL_INTERVAL:-} falls
// back to the default.
//
// References are expanded in values only, never in keys, and after the
// YAML is parsed: line numbers stay those of the file, and a variable's
// content is never read as YAML, so it cannot add keys or change the
// file's structure.
//
// # Secrets
//
// api.client_secret and api.token can be written in place, taken from the
// environment (client_secret: ${CLIENT_SECRET}) or read from the file
// named by api.client_secret_file or api.token_file: its content, with
// surrounding white space trimmed. A relative secret file path is relative
// to the configuration file's directory. Setting both forms of one secret
// is an error. Secrets stay out of logs: Config.Redacted returns a copy
// safe to show, and the LogValue and String methods of Config, API, Redis
// and HTTP redact them. store.path, which names data rather than
// configuration, stays relative to the working directory.
//
// # Defaults
//
// A key the file does not set takes its built-in default. A feed's
// settings are resolved key by key from three layers: the built-in
// defaults, then the defaults section, then the feed's own keys; the most
// specific layer that sets a key wins. Lists, maps and sub-sections
// (include, event) are taken whole from one layer, never merged, and an
// explicit empty list (categories: []) overrides an inherited one. After
// a successful Load every feed's settings are resolved: each pointer that
// has a default is non-nil.
//
// # Validation
//
// Load reports every problem it finds at once, as a *Problems error, each
// with file, line and field path, such as
//
//	feeds.yaml:14: feeds[3].url: not an absolute http(s) or file URL (got "example.com/rss")
//
// Field paths use the file's keys and zero-based list indexes. An interval
// written in the file outside http.min_interval and http.max_interval is
// an error, not silently clamped, so that the file says what runs; the
// built-in 15m is brought within them. Checks that
// belong to other packages (the expressions in type_rules and
// category_rules, which package transform compiles) join the same list
// through Loader.Check, with Config.Line giving their lines.
//
// # Reloading
//
// A Watcher reloads the file when it or a secret file changes, or on
// demand, and hands each valid new version to its caller; an invalid
// version is logged and refused, and the running one stays. Diff tells
// which feeds a new version adds, removes or changes.
package config

//go:generate go test -run ^TestReference$ -update
