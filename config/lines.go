package config

import (
	"reflect"
	"sync"
)

// lineIndex is where each field path of a config was written: the
// decoder's map while the file is parsed and checked, when the problems
// are found. A config that loaded keeps only the file's text, and the map
// is built again from it the first time a line is asked for (Line and
// Problem on a loaded config: rare, since every problem of a load or a
// reload was found, with its line, before it returned). The map was the
// largest part of a config's memory after its feeds: a key string and an
// entry for every key, item and list of the file, about 180 bytes a feed
// (docs/PERFORMANCE.md), where the text is what the file holds, a third of
// that for a feed of an id and a URL.
type lineIndex struct {
	once sync.Once
	m    map[string]int
	// file and src are the file's name and text, until m is built.
	file string
	src  []byte
}

// get returns the map of paths to lines; nil (no lines) on a nil index.
func (x *lineIndex) get() map[string]int {
	if x == nil {
		return nil
	}
	x.once.Do(func() {
		if x.m == nil {
			x.m = fileLines(x.file, x.src)
		}
		x.src = nil
	})
	return x.m
}

// fileLines decodes src again, as Parse did, for the lines only: the
// decoder records a key's line before it decodes its value, so what an
// ${VAR} expands to makes no difference.
func fileLines(name string, src []byte) map[string]int {
	probs := &Problems{}
	root, err := parseYAML(name, src, probs)
	if err != nil || root == nil {
		return map[string]int{}
	}
	d := newDecoder(name, func(string) (string, bool) { return "", false }, probs)
	d.budget = aliasBudget(root)
	d.decode(root, reflect.ValueOf(&Config{}).Elem(), "")
	return d.lines
}
