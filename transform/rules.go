package transform

import (
	"fmt"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/mmcdole/gofeed"
)

// ruleEnv is what type_rules and category_rules expressions see. Texts are
// plain text; link is the canonical item link; categories are the item's own
// categories (plain text, repeats removed, ev:type included), before
// category_map. For example:
//
//	has_category("Events")                       (case-insensitive)
//	"Events" in categories                       (exact)
//	link contains "/events/" || title matches "(?i)webinar"
//	ext("ev:type") == "conference"
type ruleEnv struct {
	Title      string   `expr:"title"`
	Summary    string   `expr:"summary"`
	Link       string   `expr:"link"`
	GUID       string   `expr:"guid"`
	Author     string   `expr:"author"`
	Categories []string `expr:"categories"`
	FeedTitle  string   `expr:"feed_title"`
	FeedLink   string   `expr:"feed_link"`

	// HasCategory reports whether the item has a category, ignoring case.
	HasCategory func(name string) bool `expr:"has_category"`
	// Ext returns the value at an extension path (see extPath), or "".
	Ext func(path string) string `expr:"ext"`
}

func newRuleEnv(feed *gofeed.Feed, item *gofeed.Item, d *itemData) *ruleEnv {
	cats := d.sourceCategories
	return &ruleEnv{
		Title:      d.fullTitle,
		Summary:    d.descriptionText,
		Link:       d.link,
		GUID:       strings.TrimSpace(item.GUID),
		Author:     authorName(item),
		Categories: cats,
		FeedTitle:  plainText(feed.Title),
		FeedLink:   feed.Link,
		HasCategory: func(name string) bool {
			for _, c := range cats {
				if strings.EqualFold(c, name) {
					return true
				}
			}
			return false
		},
		Ext: func(path string) string {
			p, err := parseExtPath(path)
			if err != nil {
				return ""
			}
			return p.value(item)
		},
	}
}

// pickType returns the type of the first type rule that holds, else the
// feed's type.
func (m *Mapping) pickType(env *ruleEnv) (string, error) {
	for _, r := range m.typeRules {
		ok, err := runRule(r.prog, env)
		if err != nil {
			return "", fmt.Errorf("%s: %w", r.path, err)
		}
		if ok {
			return r.typ, nil
		}
	}
	return m.typ, nil
}

// ruleCategories returns the names added by every category rule that holds.
func (m *Mapping) ruleCategories(env *ruleEnv) ([]string, error) {
	var out []string
	for _, r := range m.categoryRules {
		ok, err := runRule(r.prog, env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.path, err)
		}
		if ok {
			out = append(out, r.names...)
		}
	}
	return out, nil
}

func runRule(prog *vm.Program, env *ruleEnv) (bool, error) {
	out, err := expr.Run(prog, *env)
	if err != nil {
		return false, err
	}
	ok, isBool := out.(bool)
	if !isBool {
		// Compile asked for a bool; nil comes from a nil-safe chain.
		return false, nil
	}
	return ok, nil
}
