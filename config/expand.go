package config

import (
	"fmt"
	"strings"
)

// expand replaces ${VAR} and ${VAR:-default} in s with values from lookup
// and $$ with $. A $ followed by anything else is kept, so prices and
// regular expressions such as "^\$[0-9]+$" need no escaping. The default is
// taken literally up to the first "}" (no nesting), which keeps the syntax
// small enough to read at a glance.
//
// It returns the expanded text, whether s held any ${...} reference (an
// empty result then means "not set"), and one message per bad reference;
// the text is meaningless when there are messages.
func expand(s string, lookup func(string) (string, bool)) (out string, referenced bool, errs []string) {
	if !strings.Contains(s, "$") {
		return s, false, nil
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 || i == len(s)-1 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			s = s[i+2:]
			continue
		case '{':
		default:
			b.WriteByte('$')
			s = s[i+1:]
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			errs = append(errs, fmt.Sprintf("unterminated %q: close it with } or write $$ for a literal $", s[i:]))
			break
		}
		ref := s[i : i+end+1]
		inner := ref[2 : len(ref)-1]
		s = s[i+end+1:]
		referenced = true

		name, rest := inner, ""
		if j := strings.IndexFunc(inner, func(r rune) bool { return !isNameRune(r) }); j >= 0 {
			name, rest = inner[:j], inner[j:]
		}
		if !validName(name) {
			errs = append(errs, fmt.Sprintf("invalid variable name in %q: use letters, digits and _, not starting with a digit", ref))
			continue
		}
		value, set := lookup(name)
		switch {
		case rest == "":
			if !set {
				errs = append(errs, fmt.Sprintf("environment variable %s is not set (write ${%s:-default} to give a default)", name, name))
				continue
			}
		case strings.HasPrefix(rest, ":-"):
			if value == "" {
				value = rest[2:]
			}
		default:
			errs = append(errs, fmt.Sprintf("unsupported reference %q: use ${VAR} or ${VAR:-default}", ref))
			continue
		}
		b.WriteString(value)
	}
	return b.String(), referenced, errs
}

func isNameRune(r rune) bool {
	return r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}

func validName(name string) bool {
	return name != "" && !('0' <= name[0] && name[0] <= '9')
}
