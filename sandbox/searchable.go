package sandbox

import (
	"fmt"
	"strings"
)

// unsearch marks the fields named "type.field" (content.external_id,
// story.title, ...) not searchable in schemas: their templates say so and
// a filter on them is refused with a 400, as on a service that does not
// index them. It fails on a name that is not a field of a data type.
func unsearch(schemas map[string]*schema, names []string) error {
	for _, name := range names {
		typ, field, ok := strings.Cut(strings.TrimSpace(name), ".")
		sc := schemas[typ]
		if !ok || sc == nil || sc.field(field) == nil {
			return fmt.Errorf("not searchable %q: want type.field, a field of a data type (content.external_id)", name)
		}
		sc.field(field).searchable = false
	}
	return nil
}
