package feeds

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readCapped reads the same bytes whatever size it is told, and refuses
// more than max whatever size it is told.
func TestReadCappedSizes(t *testing.T) {
	body := strings.Repeat("0123456789", 100)
	for _, size := range []int64{-1, 0, 1, 500, 999, 1000, 1001, 4000} {
		for _, half := range []bool{false, true} {
			var r io.Reader = strings.NewReader(body)
			if half {
				r = iotest.HalfReader(r)
			}
			got, err := readCapped(nil, r, 1000, size)
			if err != nil || !bytes.Equal(got, []byte(body)) {
				t.Errorf("size %d, half reads %v: %d bytes, %v; want the %d bytes", size, half, len(got), err, len(body))
			}
		}
		// Into memory of another read's, shorter or longer than the body.
		for _, room := range []int{10, 999, 1000, 1001, 5000} {
			buf := bytes.Repeat([]byte("x"), room)
			got, err := readCapped(buf[:7], iotest.HalfReader(strings.NewReader(body)), 1000, size)
			if err != nil || !bytes.Equal(got, []byte(body)) {
				t.Errorf("size %d, into %d bytes of room: %d bytes, %v; want the %d bytes", size, room, len(got), err, len(body))
			}
		}
		if _, err := readCapped(nil, strings.NewReader(body+"x"), 1000, size); !errors.Is(err, ErrTooLarge) {
			t.Errorf("size %d: 1,001 bytes with max 1,000: %v; want ErrTooLarge", size, err)
		}
	}
	if _, err := readCapped(nil, iotest.TimeoutReader(strings.NewReader(body)), 1000, 1000); !errors.Is(err, iotest.ErrTimeout) {
		t.Errorf("a failing read: %v; want iotest.ErrTimeout", err)
	}
}
