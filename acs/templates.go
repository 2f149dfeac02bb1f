package acs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// TemplatesService reads the self-description of each data type. The spec
// says template endpoints exist but not where; the path pattern is
// [DefaultTemplatePath] unless [WithTemplatePath] says otherwise.
type TemplatesService service

// Get returns the template of dataType (one of the Type constants, such as
// [TypeStory] or [TypeContent]): its fields, and which are searchable.
func (s *TemplatesService) Get(ctx context.Context, dataType string) (*Template, *Response, error) {
	if dataType == "" {
		return nil, nil, invalid("type", "empty data type")
	}
	r, err := s.client.newRequest(http.MethodGet, s.client.tmplPath, nil, nil, dataType)
	if err != nil {
		return nil, nil, err
	}
	// The route keeps the data type: there are a dozen, so it stays a
	// bounded metric label, and it says which template failed.
	r.route = strings.Replace(s.client.tmplPath, "{type}", url.PathEscape(dataType), 1)
	out := new(Template)
	resp, found, err := s.client.do(ctx, r, out)
	if err != nil || !found {
		return nil, resp, err
	}
	return out, resp, nil
}

// CheckFilter fails with [ErrInvalid] when f uses a field the template of
// dataType does not mark searchable. Templates are fetched once per data
// type and client, then reused.
//
// A template the client cannot read (its answer matches [ErrUnreadable])
// does not block the look-ups it guards: CheckFilter reports it once per
// data type to the function of [WithNotify] and lets every filter of that
// type through, leaving the service to judge them.
func (s *TemplatesService) CheckFilter(ctx context.Context, dataType string, f Filter) error {
	t, err := s.cached(ctx, dataType)
	if err != nil {
		return err
	}
	if t == nil {
		return nil // unreadable: let through
	}
	searchable := t.Searchable()
	for _, name := range f.Fields() {
		if !slices.Contains(searchable, name) {
			return invalid("filters_json."+name, "not searchable for %s (searchable: %s)", dataType, strings.Join(searchable, ", "))
		}
	}
	return nil
}

func (s *TemplatesService) cached(ctx context.Context, dataType string) (*Template, error) {
	c := s.client
	c.tmplMu.Lock()
	t, known := c.templates[dataType]
	c.tmplMu.Unlock()
	if known {
		return t, nil // nil: unreadable, reported already
	}
	// Not held across the request: two racing fetches of the same template
	// cost one extra GET, while holding the lock would stall every check
	// behind one slow fetch.
	t, _, err := s.Get(ctx, dataType)
	if errors.Is(err, ErrUnreadable) {
		c.tmplMu.Lock()
		_, reported := c.templates[dataType]
		c.templates[dataType] = nil
		c.tmplMu.Unlock()
		if !reported && c.notify != nil {
			c.notify(ctx, fmt.Errorf("acs: template of %s cannot be read, so filters on %s are not checked: %w", dataType, dataType, err))
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("acs: template of %s: empty answer, cannot check the filter", dataType)
	}
	c.tmplMu.Lock()
	c.templates[dataType] = t
	c.tmplMu.Unlock()
	return t, nil
}
