package acs

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// scanRef is decode's path for a [Ref] read from an answer in the usual
// shape, {"data": {..., "id": 12, "self": "..."}, ...}: a create's answer
// holds the whole content created (its body too), of which the worker
// keeps the id and self link. encoding/json scans such a body twice (its
// validity check, then the decoding that skips what it does not keep),
// one byte at a time through its state machine; this is one pass that
// checks the JSON's syntax while it skips. ok is false for anything it
// does not read exactly as decode would (another shape, an id that is not
// a plain integer, escapes or non-ASCII letters in a key, a key only
// case-folding to one decode knows): decode's general path then reads
// the body as before. With ok, the body is valid JSON and ref holds what
// decode would have read; found is always true then (data is an object).
func scanRef(b []byte) (ref Ref, ok bool) {
	s := refScanner{b: b}
	s.space()
	if !s.eat('{') {
		return Ref{}, false
	}
	seenData := false
	s.space()
	if s.eat('}') {
		return Ref{}, false // no data
	}
	for {
		key, ok := s.member()
		if !ok || !seenData && string(key) != "data" {
			// decode's fast path, whose reading this is, wants data first.
			return Ref{}, false
		}
		switch {
		case string(key) == "data":
			if seenData || s.peek() != '{' {
				return Ref{}, false // twice, or not an object: decode's general path
			}
			seenData = true
			if ref, ok = s.refObject(); !ok {
				return Ref{}, false
			}
		case foldsTo(key, "data", "template", "page", "page_size", "total"):
			// A key decode reads (case-insensitively, as encoding/json
			// matches field names) and this path does not.
			return Ref{}, false
		default:
			if !s.skip(0) {
				return Ref{}, false
			}
		}
		s.space()
		if s.eat(',') {
			continue
		}
		if !s.eat('}') {
			return Ref{}, false
		}
		break
	}
	s.space()
	if s.i != len(s.b) || !seenData {
		return Ref{}, false
	}
	return ref, true
}

// refScanner walks one JSON document.
type refScanner struct {
	b []byte
	i int
}

// maxScanDepth bounds nesting; deeper documents go to decode's general
// path (encoding/json allows 10,000 levels).
const maxScanDepth = 100

func (s *refScanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *refScanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *refScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// key reads an object key made of printable ASCII without escapes (ok
// false otherwise: such a key may fold to one decode knows).
func (s *refScanner) key() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			k := s.b[start:s.i]
			s.i++
			return k, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// member reads an object member's key and its colon, with the white
// space around them.
func (s *refScanner) member() ([]byte, bool) {
	s.space()
	key, ok := s.key()
	if !ok {
		return nil, false
	}
	s.space()
	if !s.eat(':') {
		return nil, false
	}
	s.space()
	return key, true
}

// refObject reads the data object: "id" an integer, "self" a string
// without escapes, every other value checked and skipped.
func (s *refScanner) refObject() (Ref, bool) {
	var ref Ref
	s.i++ // '{'
	s.space()
	if s.eat('}') {
		return ref, true
	}
	for {
		key, ok := s.member()
		if !ok {
			return Ref{}, false
		}
		switch {
		case string(key) == "id":
			start := s.i
			if !s.number() {
				return Ref{}, false
			}
			// A fraction, an exponent or an int64 overflow is read by
			// the tolerant path (or refused there).
			id, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
			if err != nil {
				return Ref{}, false
			}
			ref.ID = id
		case string(key) == "self":
			if !s.eat('"') {
				return Ref{}, false // null or another type: the general path
			}
			start := s.i
			for s.i < len(s.b) && s.b[s.i] != '"' {
				if c := s.b[s.i]; c == '\\' || c < 0x20 || c >= 0x80 {
					return Ref{}, false
				}
				s.i++
			}
			if s.i == len(s.b) {
				return Ref{}, false
			}
			ref.Self = string(s.b[start:s.i])
			s.i++
		case foldsTo(key, "id", "self"):
			return Ref{}, false
		default:
			if !s.skip(1) {
				return Ref{}, false
			}
		}
		s.space()
		if s.eat(',') {
			continue
		}
		if s.eat('}') {
			return ref, true
		}
		return Ref{}, false
	}
}

// foldsTo reports whether the ASCII key equals one of names ignoring case.
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if len(key) == len(n) && strings.EqualFold(string(key), n) {
			return true
		}
	}
	return false
}

// skip checks one JSON value and moves past it.
func (s *refScanner) skip(depth int) bool {
	if depth > maxScanDepth {
		return false
	}
	switch c := s.peek(); {
	case c == '"':
		return s.str()
	case c == '{':
		s.i++
		s.space()
		if s.eat('}') {
			return true
		}
		for {
			s.space()
			if s.peek() != '"' || !s.str() {
				return false
			}
			s.space()
			if !s.eat(':') {
				return false
			}
			s.space()
			if !s.skip(depth + 1) {
				return false
			}
			s.space()
			if s.eat(',') {
				continue
			}
			return s.eat('}')
		}
	case c == '[':
		s.i++
		s.space()
		if s.eat(']') {
			return true
		}
		for {
			s.space()
			if !s.skip(depth + 1) {
				return false
			}
			s.space()
			if s.eat(',') {
				continue
			}
			return s.eat(']')
		}
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *refScanner) literal(w string) bool {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

// str checks a string (at its opening quote) and moves past it: no
// control characters, only JSON's escapes. Other bytes pass as
// encoding/json lets them (invalid UTF-8 included).
func (s *refScanner) str() bool {
	s.i++ // '"'
	for s.i < len(s.b) {
		// A create's answer is mostly its body's HTML: eight bytes at a
		// time while none of them needs a look.
		for s.i+8 <= len(s.b) && !special8(binary.LittleEndian.Uint64(s.b[s.i:])) {
			s.i += 8
		}
		if s.i == len(s.b) {
			break
		}
		c := s.b[s.i]
		if c >= 0x20 && c != '"' && c != '\\' {
			s.i++ // most bytes: one test
			continue
		}
		switch {
		case c == '"':
			s.i++
			return true
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if len(s.b)-s.i < 6 {
					return false
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !isHex(h) {
						return false
					}
				}
				s.i += 6
			default:
				return false
			}
		case c < 0x20:
			return false
		default:
			s.i++
		}
	}
	return false
}

// special8 reports whether any of the eight bytes in w is one str must
// look at: '"', '\\' or a control character (below 0x20). Each test is
// the classic "has a byte below n" on w, or on w XOR the byte (zero where
// they match), exact for the word as a whole.
func special8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := w ^ ones*'"'
	bs := w ^ ones*'\\'
	return ((q-ones)&^q|(bs-ones)&^bs|(w-ones*0x20)&^w)&highs != 0
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number checks a JSON number and moves past it.
func (s *refScanner) number() bool {
	s.eat('-')
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return false
	}
	if s.eat('.') {
		if !s.digits() {
			return false
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits moves past one or more digits; false when there is none.
func (s *refScanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}
