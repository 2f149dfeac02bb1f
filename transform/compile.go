package transform

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/feedworker/feedworker/config"
)

// Mapping is a feed's compiled mapping settings. It is immutable and safe for
// concurrent use.
type Mapping struct {
	feedID string
	// The compiled settings, shared by the feeds whose settings are the
	// same (ForFeed): a feed's own Mapping is two words.
	*rules
}

// rules are a Mapping's compiled settings, everything but the feed's id.
type rules struct {
	typ string

	typeRules     []typeRule
	categoryRules []categoryRule

	categories   []string          // static names
	categoryIDs  []int64           // static ids
	categoryMap  map[string]string // lower-cased source name → name ("" drops it)
	passUnmapped bool

	include, exclude *filter
	maxAge           time.Duration
	requireImage     bool
	fetchOGImage     bool
	fullText         fullText

	titleMax, summaryMax     int
	expireAfter, priorityFor time.Duration
	static                   staticFields

	event eventPaths
	need  needPaths
	ical  icalRules

	sanitizer *bodySanitizer
}

type typeRule struct {
	path string // "type_rules[0].when", for runtime errors
	prog *vm.Program
	typ  string
}

type categoryRule struct {
	path  string
	prog  *vm.Program
	names []string
}

// staticFields are copied into every payload of the feed.
type staticFields struct {
	authorID, priorityID, statusID                  *int64
	private, exclusiveToSegment, availableInPartner *bool
	enableComments, enableLinkTracking, evergreen   *bool
	segments                                        []int64
	moreButtonText                                  string
}

// FieldError is one problem in a feed's mapping settings. Path names the
// setting relative to the feed, in the config file's own words, such as
// "type_rules[1].when" or "include.patterns[0]", so that the config layer
// can point at its file and line.
type FieldError struct {
	Path string
	Err  error
}

// Error reads "path: problem".
func (e *FieldError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *FieldError) Unwrap() error { return e.Err }

// CompileError lists every problem Compile found in one feed's mapping.
type CompileError struct {
	FeedID string
	Fields []*FieldError
}

// Error names the feed and lists every problem on one line.
func (e *CompileError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mapping of feed %q: ", e.FeedID)
	if len(e.Fields) > 1 {
		fmt.Fprintf(&b, "%d errors: ", len(e.Fields))
	}
	for i, f := range e.Fields {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Error())
	}
	return b.String()
}

// Unwrap returns the field errors, for errors.As.
func (e *CompileError) Unwrap() []error {
	out := make([]error, len(e.Fields))
	for i, f := range e.Fields {
		out[i] = f
	}
	return out
}

// Compile checks a feed's mapping settings and prepares them for Map: it
// compiles the expressions of type_rules and category_rules, the filters'
// regular expressions and the extension paths of event and need. It reports
// every problem at once, as a *CompileError.
func Compile(feedID string, m config.Mapping) (*Mapping, error) {
	// Settings left unset (a mapping that did not go through config.Load)
	// take the built-in defaults.
	def := config.Default().Defaults.Mapping
	c := &compiler{}
	out := &Mapping{feedID: feedID, rules: &rules{
		typ:          c.contentType("type", m.Type, true),
		categoryIDs:  slices.Clone(m.CategoryIDs),
		passUnmapped: deref(m.PassUnmappedCategories),
		maxAge:       durationOf(m.MaxAge),
		requireImage: deref(m.RequireImage),
		fetchOGImage: deref(m.FetchOGImage),
		titleMax:     c.positive("title_max", m.TitleMax, *def.TitleMax),
		summaryMax:   c.positive("summary_max", m.SummaryMax, *def.SummaryMax),
		expireAfter:  durationOf(m.ExpireAfter),
		priorityFor:  durationOf(m.PriorityFor),
		static: staticFields{
			authorID:           m.AuthorID,
			priorityID:         m.PriorityID,
			statusID:           m.StatusID,
			private:            m.Private,
			exclusiveToSegment: m.ExclusiveToSegment,
			availableInPartner: m.AvailableInPartner,
			enableComments:     m.EnableComments,
			enableLinkTracking: m.EnableLinkTracking,
			evergreen:          m.Evergreen,
			segments:           slices.Clone(m.Segments),
			moreButtonText:     strings.TrimSpace(deref(m.MoreButtonText)),
		},
		sanitizer: sharedSanitizer(),
	}}
	out.fullText = c.compileFullText(m)
	if feedID == "" {
		c.add("id", errors.New("a feed id is required: external ids are namespaced by it"))
	}

	mayNeed := out.typ == TypeNeed
	for i, r := range m.TypeRules {
		path := fmt.Sprintf("type_rules[%d]", i)
		typ := c.contentType(path+".type", r.Type, false)
		mayNeed = mayNeed || typ == TypeNeed
		if prog := c.expression(path+".when", r.When); prog != nil && typ != "" {
			out.typeRules = append(out.typeRules, typeRule{path: path + ".when", prog: prog, typ: typ})
		}
	}

	for i, name := range m.Categories {
		if name = strings.TrimSpace(name); name == "" {
			c.add(fmt.Sprintf("categories[%d]", i), errors.New("empty category name"))
			continue
		}
		out.categories = append(out.categories, name)
	}
	out.categoryMap = c.categoryMap(m.CategoryMap)
	for i, r := range m.CategoryRules {
		path := fmt.Sprintf("category_rules[%d]", i)
		var names []string
		for j, name := range r.Categories {
			if name = strings.TrimSpace(name); name == "" {
				c.add(fmt.Sprintf("%s.categories[%d]", path, j), errors.New("empty category name"))
				continue
			}
			names = append(names, name)
		}
		if len(r.Categories) == 0 {
			c.add(path+".categories", errors.New("a rule needs at least one category"))
		}
		if prog := c.expression(path+".when", r.When); prog != nil && len(names) > 0 {
			out.categoryRules = append(out.categoryRules, categoryRule{path: path + ".when", prog: prog, names: names})
		}
	}

	out.include = c.filter("include", m.Include)
	out.exclude = c.filter("exclude", m.Exclude)
	out.event = c.eventPaths(m.Event)
	out.need = c.needPaths(m.Need, mayNeed)
	out.ical = icalRulesOf(m.ICal, def.ICal)

	if len(c.errs) > 0 {
		return nil, &CompileError{FeedID: feedID, Fields: c.errs}
	}
	return out, nil
}

// compiler collects the errors of one Compile call.
type compiler struct {
	errs []*FieldError
}

func (c *compiler) add(path string, err error) {
	c.errs = append(c.errs, &FieldError{Path: path, Err: err})
}

func (c *compiler) contentType(path, s string, emptyIsStory bool) string {
	switch t := strings.ToLower(strings.TrimSpace(s)); t {
	case TypeStory, TypeLink, TypeEvent, TypeNeed:
		return t
	case "":
		if emptyIsStory {
			return TypeStory
		}
		c.add(path, errors.New("a content type is required (story, link, event or need)"))
	default:
		c.add(path, fmt.Errorf("unknown content type %q (want story, link, event or need)", s))
	}
	return ""
}

func (c *compiler) positive(path string, v *int, def int) int {
	if v == nil {
		return def
	}
	if *v <= 0 {
		c.add(path, fmt.Errorf("must be positive, got %d", *v))
		return def
	}
	return *v
}

// expression compiles a rule's condition against the rule environment.
func (c *compiler) expression(path, src string) *vm.Program {
	if strings.TrimSpace(src) == "" {
		c.add(path, errors.New("an expression is required"))
		return nil
	}
	prog, err := expr.Compile(src,
		expr.Env(ruleEnv{}),
		expr.AsBool(),
		// now() would make the mapping depend on the clock, and so the
		// payload hash on the poll.
		expr.DisableBuiltin("now"),
	)
	if err != nil {
		c.add(path, exprError(err))
		return nil
	}
	return prog
}

// exprError shortens expr's multi-line error (with a source snippet) to one
// line that still says where the problem is.
func exprError(err error) error {
	var fe *file.Error
	if errors.As(err, &fe) {
		if fe.Line > 1 {
			return fmt.Errorf("%s (line %d, column %d)", fe.Message, fe.Line, fe.Column+1)
		}
		return fmt.Errorf("%s (column %d)", fe.Message, fe.Column+1)
	}
	return err
}

func (c *compiler) categoryMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // errors in a stable order
	out := make(map[string]string, len(m))
	first := make(map[string]string, len(m))
	for _, k := range keys {
		lk := strings.ToLower(strings.TrimSpace(k))
		v := strings.TrimSpace(m[k])
		if lk == "" {
			c.add("category_map", errors.New("empty source category name"))
			continue
		}
		if prev, dup := out[lk]; dup && prev != v {
			c.add("category_map."+k, fmt.Errorf("maps to %q but %q, the same name in another case, maps to %q", v, first[lk], prev))
			continue
		}
		out[lk], first[lk] = v, k
	}
	return out
}

// filter is a compiled include or exclude setting.
type filter struct {
	keywords []string // lower-cased
	patterns []*regexp.Regexp
	fields   fieldSet
}

// fieldSet says which item texts a filter looks at.
type fieldSet struct {
	title, summary, body, link, categories, author bool
}

func (c *compiler) filter(path string, f *config.Filter) *filter {
	if f == nil || (len(f.Keywords) == 0 && len(f.Patterns) == 0) {
		return nil
	}
	out := &filter{}
	for i, k := range f.Keywords {
		if strings.TrimSpace(k) == "" {
			c.add(fmt.Sprintf("%s.keywords[%d]", path, i), errors.New("empty keyword"))
			continue
		}
		out.keywords = append(out.keywords, strings.ToLower(k))
	}
	for i, p := range f.Patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			c.add(fmt.Sprintf("%s.patterns[%d]", path, i), fmt.Errorf("invalid regular expression: %w", err))
			continue
		}
		out.patterns = append(out.patterns, re)
	}
	if len(f.Fields) == 0 {
		out.fields = fieldSet{title: true, summary: true, body: true}
	}
	for i, name := range f.Fields {
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "title":
			out.fields.title = true
		case "summary":
			out.fields.summary = true
		case "body":
			out.fields.body = true
		case "link":
			out.fields.link = true
		case "categories":
			out.fields.categories = true
		case "author":
			out.fields.author = true
		default:
			c.add(fmt.Sprintf("%s.fields[%d]", path, i), fmt.Errorf("unknown field %q (want title, summary, body, link, categories or author)", name))
		}
	}
	return out
}

// eventPaths are the compiled extension paths of event settings. Each list
// is tried in order: the configured path first, then the ev: and xCal:
// defaults.
type eventPaths struct {
	start, end, location                      []extPath
	street, city, postalCode, region, country []extPath
	allDay, registrationURL, timeZone         []extPath
	timeZoneID                                *int64
	// datePattern extracts the date text from start and end values
	// (event.date_pattern): its "date" group, else its first group.
	datePattern *regexp.Regexp
	dateGroup   int
	// dateLayout parses that text (event.date_layout; "" tries the usual
	// feed formats), and zone reads dates written without a zone when the
	// item names none (event.time_zone_name).
	dateLayout string
	zone       *time.Location
}

func (c *compiler) paths(path, configured string, defaults ...string) []extPath {
	var out []extPath
	if strings.TrimSpace(configured) != "" {
		p, err := parseExtPath(configured)
		if err != nil {
			c.add(path, err)
		} else {
			out = append(out, p)
		}
	}
	for _, d := range defaults {
		p, err := parseExtPath(d)
		if err != nil {
			panic("transform: bad default path " + d) // a bug in this file, caught by every test
		}
		out = append(out, p)
	}
	return out
}

func (c *compiler) eventPaths(f *config.EventFields) eventPaths {
	if f == nil {
		f = &config.EventFields{}
	}
	out := eventPaths{
		start:           c.paths("event.start", f.Start, "ev:startdate", "xCal:dtstart"),
		end:             c.paths("event.end", f.End, "ev:enddate", "xCal:dtend"),
		location:        c.paths("event.location", f.Location, "ev:location", "xCal:location"),
		street:          c.paths("event.street_address", f.StreetAddress),
		city:            c.paths("event.city", f.City),
		postalCode:      c.paths("event.postal_code", f.PostalCode),
		region:          c.paths("event.region", f.Region),
		country:         c.paths("event.country", f.Country),
		allDay:          c.paths("event.all_day", f.AllDay),
		registrationURL: c.paths("event.registration_url", f.RegistrationURL),
		timeZone:        c.paths("event.time_zone", f.TimeZone, "xCal:tzid"),
		timeZoneID:      f.TimeZoneID,
	}
	if f.DatePattern != "" {
		re, err := regexp.Compile(f.DatePattern)
		switch {
		case err != nil:
			c.add("event.date_pattern", fmt.Errorf("not a regular expression: %w", err))
		case re.NumSubexp() == 0:
			c.add("event.date_pattern", errors.New(`needs a group around the date, such as (?P<date>\d{4}-\d{2}-\d{2})`))
		default:
			out.datePattern, out.dateGroup = re, 1
			if i := re.SubexpIndex("date"); i > 0 {
				out.dateGroup = i
			}
		}
	}
	out.dateLayout = strings.TrimSpace(f.DateLayout)
	if name := strings.TrimSpace(f.TimeZoneName); name != "" {
		loc, err := time.LoadLocation(name)
		if err != nil || strings.EqualFold(name, "local") {
			c.add("event.time_zone_name", fmt.Errorf("unknown time zone %q (want an IANA name such as Europe/Paris)", name))
		} else {
			out.zone = loc
		}
	}
	return out
}

// needPaths are the compiled settings of need items.
type needPaths struct {
	quantity        []extPath
	byDate          []extPath
	defaultQuantity *int
	defaultByDays   *int
}

func (c *compiler) needPaths(f *config.NeedFields, mayNeed bool) needPaths {
	if f == nil {
		f = &config.NeedFields{}
	}
	out := needPaths{
		quantity:        c.paths("need.quantity", f.Quantity),
		byDate:          c.paths("need.by_date", f.ByDate),
		defaultQuantity: f.DefaultQuantity,
		defaultByDays:   f.DefaultByDays,
	}
	if f.DefaultQuantity != nil && *f.DefaultQuantity < 0 {
		c.add("need.default_quantity", fmt.Errorf("must not be negative, got %d", *f.DefaultQuantity))
	}
	if f.DefaultByDays != nil && *f.DefaultByDays < 0 {
		c.add("need.default_by_days", fmt.Errorf("must not be negative, got %d", *f.DefaultByDays))
	}
	// Every need item would be skipped: say so now rather than at each poll.
	if mayNeed && len(out.quantity) == 0 && f.DefaultQuantity == nil {
		c.add("need", errors.New("need items require need.quantity (an extension path) or need.default_quantity"))
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func durationOf(d *config.Duration) time.Duration {
	if d == nil || d.D() < 0 {
		return 0
	}
	return d.D()
}
