package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	base := head + `defaults:
  title_max: 100
feeds:
  - id: keep
    url: https://e.example/keep
  - id: change-url
    url: https://e.example/old
  - id: change-mapping
    url: https://e.example/m
    categories: [A]
  - id: remove
    url: https://e.example/remove
  - id: inherits
    url: https://e.example/inherits
`
	tests := []struct {
		name                    string
		next                    string
		added, removed, changed []string
	}{
		{"same file", base, nil, nil, nil},
		{"comments and order of keys do not matter", head + `# a comment
defaults:
  title_max: 100
feeds:
  - url: https://e.example/keep
    id: keep
  - id: change-url
    url: https://e.example/old
  - id: change-mapping
    url: https://e.example/m
    categories: [A]
  - id: remove
    url: https://e.example/remove
  - id: inherits
    url: https://e.example/inherits
    title_max: 100
`, nil, nil, nil},
		{"add, remove, change", head + `defaults:
  title_max: 100
feeds:
  - id: new
    url: https://e.example/new
  - id: keep
    url: https://e.example/keep
  - id: change-url
    url: https://e.example/new-url
  - id: change-mapping
    url: https://e.example/m
    categories: [A, B]
  - id: inherits
    url: https://e.example/inherits
`, []string{"new"}, []string{"remove"}, []string{"change-url", "change-mapping"}},
		{"a changed default changes the feeds inheriting it", head + `defaults:
  title_max: 120
feeds:
  - id: keep
    url: https://e.example/keep
    title_max: 100
  - id: change-url
    url: https://e.example/old
    title_max: 100
  - id: change-mapping
    url: https://e.example/m
    categories: [A]
    title_max: 100
  - id: remove
    url: https://e.example/remove
    title_max: 100
  - id: inherits
    url: https://e.example/inherits
`, nil, nil, []string{"inherits"}},
		{"disabling is a change", head + `defaults:
  title_max: 100
feeds:
  - id: keep
    url: https://e.example/keep
    enabled: false
  - id: change-url
    url: https://e.example/old
  - id: change-mapping
    url: https://e.example/m
    categories: [A]
  - id: remove
    url: https://e.example/remove
  - id: inherits
    url: https://e.example/inherits
`, nil, nil, []string{"keep"}},
	}
	prev := mustParse(t, base, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			next := mustParse(t, tt.next, nil)
			added, removed, changed := Diff(prev, next)
			got := [][]string{added, removed, changed}
			want := [][]string{tt.added, tt.removed, tt.changed}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("added, removed, changed (-want +got):\n%s", diff)
			}
		})
	}

	added, removed, changed := Diff(nil, prev)
	if len(added) != 5 || removed != nil || changed != nil {
		t.Errorf("Diff(nil, cfg): got %v %v %v, want every feed added", added, removed, changed)
	}
	added, removed, changed = Diff(prev, nil)
	if added != nil || len(removed) != 5 || changed != nil {
		t.Errorf("Diff(cfg, nil): got %v %v %v, want every feed removed", added, removed, changed)
	}
}

func TestEqualIgnoresEmptyVersusNil(t *testing.T) {
	t.Parallel()
	a := mustParse(t, head+feed+"    categories: []\n", nil)
	b := mustParse(t, head+feed, nil)
	if !equal(a, b) {
		t.Error("categories: [] and no categories differ")
	}
	c := mustParse(t, head+feed+"    categories: [X]\n", nil)
	if equal(a, c) {
		t.Error("categories: [] and [X] are equal")
	}
	if equal(a, nil) || !equal(nil, nil) {
		t.Error("equal with nil")
	}
}
