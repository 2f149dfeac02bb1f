package config

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
	"golang.org/x/text/unicode/norm"
)

// NewFeed is a feed entry to add to a config file (feedworker feeds
// import).
type NewFeed struct {
	ID         string   `yaml:"id"`
	URL        string   `yaml:"url"`
	Type       string   `yaml:"type,omitempty"`
	Categories []string `yaml:"categories,omitempty,flow"`
}

// FileFeed is a feed entry as a config file writes it, before ${ENV}
// expansion and defaults.
type FileFeed struct {
	ID, URL string
}

// FileFeeds lists the feed entries of a config file's text, in order.
func FileFeeds(src []byte) ([]FileFeed, error) {
	_, seq, err := feedsNode(src)
	if err != nil || seq == nil {
		return nil, err
	}
	var out []FileFeed
	for _, item := range seq.Content {
		var f FileFeed
		if item.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(item.Content); i += 2 {
				switch item.Content[i].Value {
				case "id":
					f.ID = item.Content[i+1].Value
				case "url":
					f.URL = item.Content[i+1].Value
				}
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// feedsNode finds the top-level feeds key and its sequence (nil when the
// file has no feeds key, or an empty or null one).
func feedsNode(src []byte) (key, seq *yaml.Node, err error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, nil, fmt.Errorf("read the config file: %w", err)
	}
	if len(doc.Content) == 0 {
		return nil, nil, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, nil, errors.New("read the config file: the top level is not a mapping")
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "feeds" {
			v := root.Content[i+1]
			switch {
			case v.Kind == yaml.SequenceNode:
				return root.Content[i], v, nil
			case v.Tag == "!!null":
				return root.Content[i], nil, nil
			}
			return nil, nil, fmt.Errorf("read the config file: line %d: feeds is not a list", v.Line)
		}
	}
	return nil, nil, nil
}

// AppendFeeds returns src, a config file's text, with feeds added at the
// end of its feeds list, after a comment line when comment is not empty.
// Every byte of src is kept as it was (comments, blank lines, order,
// quoting): the entries are inserted as text after the list's last line,
// indented like its items. A file without feeds gets a feeds key at its end;
// an empty flow list (feeds: []) or a null one becomes a block list.
func AppendFeeds(src []byte, feeds []NewFeed, comment string) ([]byte, error) {
	if len(feeds) == 0 {
		return src, nil
	}
	key, seq, err := feedsNode(src)
	if err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(src), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if n := len(lines); n > 0 && !strings.HasSuffix(lines[n-1], "\n") {
		lines[n-1] += "\n"
	}

	indent, at := 2, len(lines) // where the entries go: before line index at
	switch {
	case key == nil:
		lines = append(lines, "feeds:\n")
		at = len(lines)
	case seq == nil || len(seq.Content) == 0:
		// feeds:, feeds: ~ or feeds: []: the key's line becomes "feeds:"
		// (keeping a comment after the value), and the entries follow it.
		l := lines[key.Line-1]
		head := l[:key.Column-1] + "feeds:"
		if i := strings.Index(l, " #"); i >= 0 {
			head += l[i:]
		} else {
			head += "\n"
		}
		lines[key.Line-1] = strings.TrimRight(head, "\n") + "\n"
		indent, at = key.Column-1+2, key.Line
	default:
		first := seq.Content[0]
		indent = first.Column - 1 // the column of "id", after "- "
		at = endOfList(lines, seq, key.Column)
		indent -= 2
	}
	var b strings.Builder
	pad := strings.Repeat(" ", indent)
	if comment != "" {
		b.WriteString("\n" + pad + "# " + comment + "\n")
	}
	for _, f := range feeds {
		out, err := yaml.Marshal([]NewFeed{f})
		if err != nil {
			return nil, fmt.Errorf("write feed %s: %w", f.ID, err)
		}
		for l := range strings.SplitAfterSeq(string(out), "\n") {
			if l != "" {
				b.WriteString(pad + l)
			}
		}
	}
	res := strings.Join(lines[:at], "") + b.String() + strings.Join(lines[at:], "")
	// The result must read as the same file with more feeds.
	_, check, err := feedsNode([]byte(res))
	if err != nil || check == nil || len(check.Content) != len(seqItems(seq))+len(feeds) {
		return nil, fmt.Errorf("merging into the config file went wrong (%v); the file is left as it was", err)
	}
	return []byte(res), nil
}

func seqItems(seq *yaml.Node) []*yaml.Node {
	if seq == nil {
		return nil
	}
	return seq.Content
}

// endOfList is the index of the line after the feeds list's last line of
// content: the next line that starts at or left of the feeds key's column
// with something other than a comment ends the list, and blank lines and
// comments just before it belong to what follows.
func endOfList(lines []string, seq *yaml.Node, keyCol int) int {
	last := seq.Content[len(seq.Content)-1].Line - 1
	end := len(lines)
	for i := last + 1; i < len(lines); i++ {
		t := strings.TrimLeft(lines[i], " \t")
		if t == "\n" || t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if len(lines[i])-len(t) < keyCol {
			end = i
			break
		}
	}
	for end > last+1 {
		t := strings.TrimSpace(lines[end-1])
		if t != "" && !strings.HasPrefix(t, "#") {
			break
		}
		end--
	}
	return end
}

// FeedIDFrom makes a feed id from a title: lower-case letters and digits,
// words joined by "-", accents dropped ("Café Müller" → "cafe-muller"),
// at most 64 characters, cut at a word boundary. It is "" when the title has no letter or digit.
func FeedIDFrom(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range norm.NFKD.String(title) {
		switch {
		case unicode.Is(unicode.Mn, r):
			// a combining accent of the letter before
		case r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(unicode.ToLower(r))
		default:
			dash = true
		}
		if b.Len() > 256 {
			break
		}
	}
	id := b.String()
	if len(id) > 64 {
		// Cut at a word boundary where there is one.
		id = id[:64]
		if i := strings.LastIndexByte(id, '-'); i > 0 {
			id = id[:i]
		}
	}
	return strings.Trim(id, "-")
}

// UniqueFeedID returns id, or id-2, id-3, ... whichever taken does not
// hold, and records it as taken.
func UniqueFeedID(id string, taken map[string]bool) string {
	out := id
	for n := 2; taken[out]; n++ {
		out = fmt.Sprintf("%s-%d", id, n)
	}
	taken[out] = true
	return out
}

// SameFeedURL reports whether two feed URLs name the same feed: equal
// after trimming, ignoring the case of the scheme and host and a trailing
// slash.
func SameFeedURL(a, b string) bool {
	return normFeedURL(a) == normFeedURL(b)
}

func normFeedURL(s string) string {
	s = strings.TrimSpace(s)
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	host, path, _ := strings.Cut(rest, "/")
	return strings.ToLower(scheme) + "://" + strings.ToLower(host) + "/" + strings.TrimSuffix(path, "/")
}
