package feeds

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
)

// cutPartial finds where an XML document that gofeed refused stops being
// readable (it ends inside an element, a close tag is missing, a section is
// unterminated) and returns the document cut at the last point before that
// where no item or entry was open, with the elements still open there
// closed. Every item complete before the break survives; the one it broke
// off in does not. cause says where and why reading stopped. ok is false
// when the document reads to its end without error (gofeed failed for
// another reason) or the break comes before the root element opened.
//
// The scan reads like gofeed does (encoding/xml, not strict), so it breaks
// where gofeed broke.
func cutPartial(doc []byte) (cut []byte, cause error, ok bool) {
	type open struct {
		raw  string // the name as written, prefix included
		item bool
	}
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = false
	var (
		stack   []open
		inItem  int
		safeAt  = -1
		closing []string // the close tags needed at safeAt, innermost first
	)
	mark := func(at int64) {
		safeAt = int(at)
		closing = closing[:0]
		for i := len(stack) - 1; i >= 0; i-- {
			closing = append(closing, stack[i].raw)
		}
	}
	for {
		start := d.InputOffset()
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil, nil, false
		}
		if err != nil {
			cause = fmt.Errorf("document ends early or breaks off: %w", err)
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			isItem := t.Name.Local == "item" || t.Name.Local == "entry"
			stack = append(stack, open{raw: rawName(doc, start, t.Name.Local), item: isItem})
			if isItem {
				inItem++
			}
			// Just inside the root or an RSS channel is safe too, so a
			// document cut before its first item still yields the feed's
			// own title and links.
			if inItem == 0 && (len(stack) == 1 || t.Name.Local == "channel") {
				mark(d.InputOffset())
			}
		case xml.EndElement:
			if len(stack) == 0 {
				continue
			}
			if stack[len(stack)-1].item {
				inItem--
			}
			stack = stack[:len(stack)-1]
			if inItem == 0 && len(stack) > 0 {
				mark(d.InputOffset())
			}
		}
	}
	if safeAt < 0 {
		return nil, cause, false
	}
	var b bytes.Buffer
	b.Grow(safeAt + 64)
	b.Write(doc[:safeAt])
	for _, name := range closing {
		b.WriteString("</" + name + ">")
	}
	return b.Bytes(), cause, true
}

// rawName reads the element name as written at doc[at:] ("<dc:creator ...")
// so the close tag matches it; local is the fallback.
func rawName(doc []byte, at int64, local string) string {
	if at < 0 || int(at) >= len(doc) || doc[at] != '<' {
		return local
	}
	rest := doc[at+1:]
	end := bytes.IndexAny(rest, " \t\r\n/>")
	if end <= 0 {
		return local
	}
	return string(rest[:end])
}
