package acs

import (
	"context"
	"iter"
	"net/http"
)

// CategoriesService handles /v3/category (spec 4.5).
type CategoriesService service

// List returns one page of Categories.
func (s *CategoriesService) List(ctx context.Context, opts *ListOptions) ([]*Category, *Response, error) {
	return list[Category](ctx, s.client, "/v3/category", TypeCategory, opts)
}

// All iterates over the Categories of every page from opts.Page on.
func (s *CategoriesService) All(ctx context.Context, opts *ListOptions) iter.Seq2[*Category, error] {
	return all(ctx, opts, s.List)
}

// Get returns one Category.
func (s *CategoriesService) Get(ctx context.Context, id int64) (*Category, *Response, error) {
	return call[Category](ctx, s.client, http.MethodGet, "/v3/category/{id}", nil, id)
}

// Create adds a Category.
func (s *CategoriesService) Create(ctx context.Context, req *CategoryCreate) (*Category, *Response, error) {
	if req == nil {
		return nil, nil, invalid("", "nil category")
	}
	return call[Category](ctx, s.client, http.MethodPost, "/v3/category", req)
}

// Delete removes Category id.
func (s *CategoriesService) Delete(ctx context.Context, id int64) (*Response, error) {
	return send(ctx, s.client, http.MethodDelete, "/v3/category/{id}", nil, id)
}
