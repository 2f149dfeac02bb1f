package transform

import (
	"fmt"
	"strings"
	"time"

	"github.com/mmcdole/gofeed"
)

// filterItem applies max_age, exclude and include, in that order (cheapest
// first), and returns why the item is dropped, or "". An item without a
// date is never too old: its age is unknown, and it is new to us.
func (m *Mapping) filterItem(item *gofeed.Item, d *itemData, published, now time.Time) string {
	if m.maxAge > 0 && !published.IsZero() && now.Sub(published) > m.maxAge {
		return fmt.Sprintf("too old: published %s, max_age %s", published.Format(time.RFC3339), m.maxAge)
	}
	if m.exclude != nil {
		if field, what := m.exclude.match(item, d); field != "" {
			return fmt.Sprintf("excluded: %s in %s", what, field)
		}
	}
	if m.include != nil {
		if field, _ := m.include.match(item, d); field == "" {
			return "not included: no include keyword or pattern matches"
		}
	}
	return ""
}

// match returns the first field where a keyword or pattern matches, and
// which one, or "" when none does.
func (f *filter) match(item *gofeed.Item, d *itemData) (field, what string) {
	type text struct {
		name string
		get  func() string
	}
	var texts []text
	if f.fields.title {
		texts = append(texts, text{"title", func() string { return d.fullTitle }})
	}
	if f.fields.summary {
		texts = append(texts, text{"summary", func() string { return d.descriptionText }})
	}
	if f.fields.body {
		texts = append(texts, text{"body", func() string { return d.bodyContent().text() }})
	}
	if f.fields.link {
		texts = append(texts, text{"link", func() string { return d.link }})
	}
	if f.fields.categories {
		texts = append(texts, text{"categories", func() string { return strings.Join(d.sourceCategories, "\n") }})
	}
	if f.fields.author {
		texts = append(texts, text{"author", func() string { return authorName(item) }})
	}
	for _, t := range texts {
		s := t.get()
		if s == "" {
			continue
		}
		if len(f.keywords) > 0 {
			lower := strings.ToLower(s)
			for _, k := range f.keywords {
				if strings.Contains(lower, k) {
					return t.name, fmt.Sprintf("keyword %q", k)
				}
			}
		}
		for _, re := range f.patterns {
			if re.MatchString(s) {
				return t.name, fmt.Sprintf("pattern %q", re.String())
			}
		}
	}
	return "", ""
}
