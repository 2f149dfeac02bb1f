package config

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Problem is one thing wrong with a configuration file, at a line and a
// field path such as "feeds[3].url" (YAML keys, zero-based list indexes).
// Line is 0 when the problem has no place in the file, for example a
// required key that is missing from a missing section.
type Problem struct {
	File  string
	Line  int
	Field string
	Msg   string
}

// String formats p as "file:line: field: message", the form editors and
// CI logs turn into links; the parts that are unknown are left out.
func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			b.WriteString(":" + strconv.Itoa(p.Line))
		}
		b.WriteString(": ")
	} else if p.Line > 0 {
		b.WriteString("line " + strconv.Itoa(p.Line) + ": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Problems is the error Load returns for an invalid file: every problem
// found, not just the first, so that one run of `feedworker validate` shows
// everything to fix. Use errors.As to get at the list.
type Problems struct {
	List []Problem
}

// Error lists every problem, one per line, sorted by line.
func (p *Problems) Error() string {
	lines := make([]string, len(p.List))
	for i, pr := range p.sorted() {
		lines[i] = pr.String()
	}
	return strings.Join(lines, "\n")
}

// Add appends a problem on field, placed by cfg.Problem, so that checks
// made outside this package (the expressions package transform compiles)
// are reported like the built-in ones. cfg may be nil. A problem on a
// field and line already reported is dropped: a check another package
// repeats, or an inherited default that every feed trips on, is listed
// once.
func (p *Problems) Add(cfg *Config, field, msg string) {
	pr := cfg.Problem(field, msg)
	for _, q := range p.List {
		if q.File == pr.File && q.Line == pr.Line && q.Field == pr.Field {
			return
		}
	}
	p.List = append(p.List, pr)
}

// Len is the number of problems.
func (p *Problems) Len() int { return len(p.List) }

// Err returns p sorted by line when it holds any problem, else nil. It
// exists so that callers never return a non-nil error holding a nil or
// empty *Problems.
func (p *Problems) Err() error {
	if p == nil || len(p.List) == 0 {
		return nil
	}
	p.List = p.sorted()
	return p
}

// sorted returns the problems ordered by file and line; the order in which
// they were found breaks ties, so a field's problems stay together.
func (p *Problems) sorted() []Problem {
	s := slices.Clone(p.List)
	slices.SortStableFunc(s, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return s
}

// at records a problem at a known line; the decoder uses it because it
// knows the YAML node's line before the line index is complete.
func (p *Problems) at(file string, line int, field, format string, args ...any) {
	p.List = append(p.List, Problem{File: file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}
