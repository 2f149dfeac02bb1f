package sandbox

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

// duplicateKeyByTokens is the decoder-token definition of duplicateKey,
// which the byte scanner must match on valid JSON.
func duplicateKeyByTokens(b []byte) string {
	type frame struct {
		object, expectKey bool
		keys              map[string]bool
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expectKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return ""
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			key, _ := tok.(string)
			if stack[n-1].keys[key] {
				return key
			}
			stack[n-1].keys[key], stack[n-1].expectKey = true, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, expectKey: true, keys: map[string]bool{}})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

var duplicateKeyCases = []string{
	`{"a":1,"b":2}`,
	`{"a":1,"a":2}`,
	`{"a":{"b":1},"b":{"b":2}}`,
	`{"a":{"b":1,"b":2}}`,
	`[{"a":1},{"a":1}]`,
	`{"a":[1,{"x":"a","a":3}],"x":1,"a":0}`,
	`{"a\"b":1,"a\u0022b":2}`,
	`{"\u00e9":1,"é":2}`,
	`{"k":"a,\"b\":1","b":2}`,
	`{"s":"\\","t":"{","s2":"[","t":1}`,
	` { "a" : 1 , "b" : { } , "a" : [ ] } `,
	`{"x":[[],[{}],{"y":null,"z":true,"y":false}]}`,
	`"just a string"`,
	`{"1":1,"2":2,"3":3,"4":4,"5":5,"6":6,"7":7,"8":8,"9":9,"10":10,"11":11,"12":12,"13":13,"14":14,"15":15,"16":16,"17":17,"18":18,"5":0}`,
	`{"1":1,"2":2,"3":3,"4":4,"5":5,"6":6,"7":7,"8":8,"9":9,"10":10,"11":11,"12":12,"13":13,"14":14,"15":15,"16":16,"17":17,"18":18}`,
}

func TestDuplicateKey(t *testing.T) {
	for _, c := range duplicateKeyCases {
		if got, want := duplicateKey([]byte(c)), duplicateKeyByTokens([]byte(c)); got != want {
			t.Errorf("duplicateKey(%s) = %q, want %q", c, got, want)
		}
	}
}

func FuzzDuplicateKey(f *testing.F) {
	for _, c := range duplicateKeyCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return // decodeJSON only scans what decoded
		}
		if got, want := duplicateKey([]byte(s)), duplicateKeyByTokens([]byte(s)); got != want {
			t.Errorf("duplicateKey(%q) = %q, want %q", s, got, want)
		}
	})
}
