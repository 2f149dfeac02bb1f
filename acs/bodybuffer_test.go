package acs

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestAnswersKeepTheirBytes reads answers one after another (their bodies
// now share a reused buffer) and checks that nothing decoded from an
// earlier answer changed when a later one was read into the same memory.
func TestAnswersKeepTheirBytes(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		reply(w, http.StatusOK, fmt.Sprintf(`{"data":{"id":%d,"first_name":"%s","email":"n%d@example.org","x_extra":"%s"}}`,
			n+1, strings.Repeat(string(rune('a'+n)), 40), n, strings.Repeat(string(rune('A'+n)), 60)))
	})
	c := newTestClient(t, rec)
	var subs []*Subscriber
	for i := range 5 {
		s, _, err := c.Subscribers.Get(context.Background(), int64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	for i, s := range subs {
		wantName := strings.Repeat(string(rune('a'+i)), 40)
		wantRaw := fmt.Sprintf(`"x_extra":"%s"`, strings.Repeat(string(rune('A'+i)), 60))
		if s.ID != int64(i+1) || s.FirstName != wantName || s.Email != fmt.Sprintf("n%d@example.org", i) || !strings.Contains(string(s.Raw), wantRaw) {
			t.Errorf("answer %d after later answers: %+v (raw %s)", i+1, s, s.Raw)
		}
	}
}
