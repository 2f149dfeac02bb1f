package acs

import (
	"cmp"
	"context"
	"iter"
	"net/url"
	"strconv"
)

// Paging defaults the service applies when a list request leaves them out
// (spec 4.1 and 8).
const (
	DefaultPage     = 1
	DefaultPageSize = 100
)

// ListOptions are the common list parameters (spec 4.1). Zero values are not
// sent, so the service's defaults apply: page 1, 100 entries. The spec gives
// no maximum page size; the sandbox refuses more than 500, and the client
// does not cap it.
type ListOptions struct {
	Page     int
	PageSize int
	Filter   Filter
}

// query encodes the options; url.Values.Encode percent-encodes the
// filters_json text as the spec's "URL-encoded string".
func (o *ListOptions) query() (url.Values, error) {
	q := url.Values{}
	if o == nil {
		return q, nil
	}
	if o.Page < 0 {
		return nil, invalid("page", "%d is negative", o.Page)
	}
	if o.PageSize < 0 {
		return nil, invalid("page_size", "%d is negative", o.PageSize)
	}
	if o.Page > 0 {
		q.Set("page", strconv.Itoa(o.Page))
	}
	if o.PageSize > 0 {
		q.Set("page_size", strconv.Itoa(o.PageSize))
	}
	if !o.Filter.IsZero() {
		b, err := o.Filter.MarshalJSON()
		if err != nil {
			return nil, err
		}
		q.Set("filters_json", string(b))
	}
	return q, nil
}

// all walks every page from opts.Page (default 1) by calling list, and
// stops at the first error, which it yields, after an empty page, or after
// a short page: one with fewer entries than the page size the answer
// reported, else than the size requested (default 100). A short page is
// not the last when the answer reported a total that the entries so far
// do not reach: the server served fewer than asked (the spec gives no
// maximum page_size, and a server may cap it silently).
//
// The only guess left is a server that caps page_size below the request
// and reports neither size nor total: it looks finished after its first
// page. Callers that must see everything ask for pages of at most
// [DefaultPageSize], which every server serves.
func all[T any](ctx context.Context, opts *ListOptions, list func(context.Context, *ListOptions) ([]*T, *Response, error)) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		var o ListOptions
		if opts != nil {
			o = *opts
		}
		if o.Page < 1 {
			o.Page = DefaultPage
		}
		start := o.Page
		// skipped estimates the entries on the pages before start, from
		// the first page's length, to compare with a total.
		seen, skipped := 0, -1
		for {
			items, resp, err := list(ctx, &o)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if len(items) == 0 {
				return
			}
			if skipped < 0 {
				skipped = (start - 1) * len(items)
			}
			seen += len(items)
			size := cmp.Or(o.PageSize, DefaultPageSize)
			total := 0
			if resp != nil {
				size = cmp.Or(resp.PageSize, size)
				total = resp.Total
			}
			if len(items) < size && (total <= 0 || skipped+seen >= total) {
				return
			}
			o.Page++
		}
	}
}
