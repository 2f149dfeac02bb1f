// Package opml reads and writes OPML subscription lists (OPML 2.0, and the
// 1.0 files feed readers still export): the outlines with an xmlUrl are
// feeds, the outlines around them folders.
//
// It reads with encoding/xml's token stream rather than a library, because
// its errors name the line of the outline at fault, and a subscription list
// has little else to read.
package opml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// ErrInvalid is matched by every error Parse returns for a bad document.
var ErrInvalid = errors.New("invalid OPML")

// Feed is one outline with an xmlUrl.
type Feed struct {
	// Title is the outline's text, else its title attribute.
	Title string
	// XMLURL is the feed's address; HTMLURL the site's, if given.
	XMLURL  string
	HTMLURL string
	// Type is the outline's type attribute ("rss", for most).
	Type string
	// Folders are the texts of the outlines around this one, outermost
	// first.
	Folders []string
	// Categories are the outline's category attribute, split at commas;
	// each is a slash-separated path as written ("/Tech/Go").
	Categories []string
	// Line is where the outline starts in the document.
	Line int
}

// Document is a parsed subscription list.
type Document struct {
	Title string
	Feeds []Feed
}

// Error is a problem at a line of the document.
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Is makes every *Error match ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Parse reads an OPML document. It fails, naming the line, on a document
// that is not XML, whose root is not <opml>, that has no outline, or that
// has an outline with neither an xmlUrl nor outlines inside it.
func Parse(r io.Reader) (*Document, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read OPML: %w", err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	// OPML files in the wild declare ISO-8859-1 and windows-1252; their
	// text is read byte for byte, which keeps ASCII URLs intact.
	dec.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	dec.Strict = true

	doc := &Document{}
	type open struct {
		text     string
		line     int
		feed     bool
		children int
	}
	var stack []open // outlines that are open
	var (
		sawRoot, inBody, inHead, inTitle bool
		outlines                         int
		title                            strings.Builder
	)
	for {
		line, _ := dec.InputPos()
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				return nil, &Error{Line: se.Line, Msg: "not well-formed XML: " + se.Msg}
			}
			return nil, &Error{Line: line, Msg: "not well-formed XML: " + err.Error()}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := strings.ToLower(t.Name.Local)
			if !sawRoot {
				if name != "opml" {
					return nil, &Error{Line: line, Msg: fmt.Sprintf("root element is <%s>, want <opml>", t.Name.Local)}
				}
				sawRoot = true
				continue
			}
			switch {
			case name == "head" && len(stack) == 0:
				inHead = true
			case name == "title" && inHead:
				inTitle = true
			case name == "body" && len(stack) == 0:
				inBody = true
			case name == "outline" && inBody:
				outlines++
				if len(stack) > 0 {
					stack[len(stack)-1].children++
				}
				f := outline(t, line)
				for _, o := range stack {
					if o.text != "" {
						f.Folders = append(f.Folders, o.text)
					}
				}
				if f.XMLURL != "" {
					doc.Feeds = append(doc.Feeds, f)
				}
				stack = append(stack, open{text: f.Title, line: line, feed: f.XMLURL != ""})
			}
		case xml.EndElement:
			name := strings.ToLower(t.Name.Local)
			switch {
			case name == "outline" && len(stack) > 0:
				o := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if !o.feed && o.children == 0 {
					what := "an outline"
					if o.text != "" {
						what = fmt.Sprintf("outline %q", o.text)
					}
					return nil, &Error{Line: o.line, Msg: what + " has no xmlUrl (and no outlines inside it)"}
				}
			case name == "title":
				inTitle = false
			case name == "head":
				inHead = false
			case name == "body":
				inBody = false
			}
		case xml.CharData:
			if !sawRoot && len(bytes.TrimSpace(t)) > 0 {
				return nil, &Error{Line: line, Msg: "not XML: text where the <opml> element should start"}
			}
			if inTitle {
				title.Write(t)
			}
		}
	}
	if !sawRoot {
		return nil, &Error{Msg: "empty document: no <opml> element"}
	}
	if outlines == 0 {
		line := bytes.Count(data, []byte("\n")) + 1
		return nil, &Error{Line: line, Msg: "no outline: the document lists no feeds"}
	}
	doc.Title = strings.TrimSpace(title.String())
	return doc, nil
}

// outline reads a feed from an <outline>'s attributes, whose names feed
// readers spell in any case.
func outline(t xml.StartElement, line int) Feed {
	f := Feed{Line: line}
	var text, title string
	for _, a := range t.Attr {
		v := strings.TrimSpace(a.Value)
		switch strings.ToLower(a.Name.Local) {
		case "text":
			text = v
		case "title":
			title = v
		case "xmlurl":
			f.XMLURL = v
		case "htmlurl":
			f.HTMLURL = v
		case "type":
			f.Type = strings.ToLower(v)
		case "category":
			for c := range strings.SplitSeq(v, ",") {
				if c = strings.TrimSpace(c); c != "" {
					f.Categories = append(f.Categories, c)
				}
			}
		}
	}
	f.Title = text
	if f.Title == "" {
		f.Title = title
	}
	return f
}

// Write writes an OPML 2.0 document listing feeds, flat, in order.
func Write(w io.Writer, title string, created time.Time, feeds []Feed) error {
	type outlineXML struct {
		Text     string `xml:"text,attr"`
		Title    string `xml:"title,attr,omitempty"`
		Type     string `xml:"type,attr"`
		XMLURL   string `xml:"xmlUrl,attr"`
		HTMLURL  string `xml:"htmlUrl,attr,omitempty"`
		Category string `xml:"category,attr,omitempty"`
	}
	type doc struct {
		XMLName xml.Name `xml:"opml"`
		Version string   `xml:"version,attr"`
		Head    struct {
			Title       string `xml:"title"`
			DateCreated string `xml:"dateCreated,omitempty"`
		} `xml:"head"`
		Body struct {
			Outlines []outlineXML `xml:"outline"`
		} `xml:"body"`
	}
	d := doc{Version: "2.0"}
	d.Head.Title = title
	if !created.IsZero() {
		d.Head.DateCreated = created.UTC().Format(time.RFC1123Z)
	}
	for _, f := range feeds {
		typ := f.Type
		if typ == "" {
			typ = "rss"
		}
		d.Body.Outlines = append(d.Body.Outlines, outlineXML{Text: f.Title, Title: f.Title, Type: typ,
			XMLURL: f.XMLURL, HTMLURL: f.HTMLURL, Category: strings.Join(f.Categories, ",")})
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("write OPML: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}
