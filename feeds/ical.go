package feeds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/emersion/go-ical"
	"github.com/mmcdole/gofeed"
)

// isCalendar reports whether a body is iCalendar (RFC 5545): served as
// text/calendar, or starting (after a byte order mark and blank space)
// with BEGIN:VCALENDAR, which RFC 5545 requires of every calendar. No RSS,
// Atom or JSON document can start that way, so the check is safe for
// feeds served with a wrong type.
func isCalendar(body []byte, contentType string) bool {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && mt == "text/calendar" {
		return true
	}
	b := bytes.TrimLeft(bytes.TrimPrefix(body, bomUTF8), " \t\r\n")
	const begin = "BEGIN:VCALENDAR"
	return len(b) >= len(begin) && strings.EqualFold(string(b[:len(begin)]), begin)
}

// ParseCalendar decodes an iCalendar document with go-ical. A file with
// several VCALENDAR objects yields the first; one without any VEVENT is
// still a calendar (an empty one). Any failure is a *ParseError.
func ParseCalendar(body []byte) (cal *ical.Calendar, err error) {
	defer func() {
		if r := recover(); r != nil {
			cal, err = nil, &ParseError{Err: fmt.Errorf("icalendar parser panic: %v", r)}
		}
	}()
	body = bytes.TrimPrefix(body, bomUTF8)
	cal, err = ical.NewDecoder(bytes.NewReader(body)).Decode()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ParseError{Err: errors.New("icalendar: the document ends before END:VCALENDAR")}
		}
		return nil, &ParseError{Err: fmt.Errorf("icalendar: %w", err)}
	}
	return cal, nil
}

// parseAny parses a fetched body as iCalendar when it is one, else as a
// feed.
// parseStoppable is parseAny, given up on when ctx ends first: parsing a
// document of 100,000 items takes seconds gofeed cannot be interrupted
// in, and a stop must not wait for it. Parsing has no side effect, so the
// abandoned parse only costs CPU until it ends. parsedBody runs once the
// parse is done with body, in either case.
func parseStoppable(ctx context.Context, body []byte, contentType string, maxSize int64, parsedBody func()) (*gofeed.Feed, *ical.Calendar, parseInfo, error) {
	type parsed struct {
		feed *gofeed.Feed
		cal  *ical.Calendar
		info parseInfo
		err  error
	}
	done := make(chan parsed, 1)
	go func() {
		feed, cal, info, err := parseAny(body, contentType, maxSize)
		parsedBody()
		done <- parsed{feed, cal, info, err}
	}()
	select {
	case p := <-done:
		return p.feed, p.cal, p.info, p.err
	case <-ctx.Done():
		return nil, nil, parseInfo{}, fmt.Errorf("parse stopped: %w", ctx.Err())
	}
}

func parseAny(body []byte, contentType string, maxSize int64) (*gofeed.Feed, *ical.Calendar, parseInfo, error) {
	if isCalendar(body, contentType) {
		cal, err := ParseCalendar(body)
		return nil, cal, parseInfo{}, err
	}
	feed, info, err := parse(body, contentType, maxSize)
	return feed, nil, info, err
}

// ParseDocument parses a document that did not come from a fetch (a
// WebSub push): iCalendar or a feed, as parseAny tells them apart.
func ParseDocument(body []byte, contentType string) (*Result, error) {
	feed, cal, info, err := parseAny(body, contentType, defaultMaxBody())
	if err != nil {
		return nil, err
	}
	res := &Result{Feed: feed, Calendar: cal, ContentType: contentType, Bytes: int64(len(body))}
	res.setInfo(info)
	return res, nil
}
