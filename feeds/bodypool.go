package feeds

// Documents are read into memory the Fetcher reuses: a document is garbage
// once parsed, as the parsers copy what they keep (TestParseKeepsNoBody),
// and reading each into new memory was 4% of what a first pass allocated.

// maxPooledBody bounds the memory kept for the next document: one feed of
// megabytes must not pin as much.
const maxPooledBody = 1 << 20

// bodyBuffer returns memory a parsed document has left, nil if none.
func (f *Fetcher) bodyBuffer() []byte {
	if b, ok := f.bodies.Get().(*[]byte); ok {
		return *b
	}
	return nil
}

// putBody gives b's memory back once nothing reads b any more.
func (f *Fetcher) putBody(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledBody {
		return
	}
	b = b[:0]
	f.bodies.Put(&b)
}
