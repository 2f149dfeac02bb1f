package worker

import (
	"sync"
	"time"

	"github.com/feedworker/feedworker/acs"
)

// apiWindow counts the API's answers per minute over the last hour, for
// the console: the send rate, 429s and 5xx.
type apiWindow struct {
	mu      sync.Mutex
	buckets [60]apiMinute
}

type apiMinute struct {
	minute               int64 // Unix minute the counts belong to
	requests, r429, r5xx int
	noAnswer             int
}

// APIState is the API's last hour as the console shows it.
type APIState struct {
	// PerMinute is the mean requests per minute over the last 5 minutes.
	PerMinute float64 `json:"requests_per_minute"`
	Requests  int     `json:"requests_last_hour"`
	TooMany   int     `json:"status_429_last_hour"`
	ServerErr int     `json:"status_5xx_last_hour"`
	NoAnswer  int     `json:"no_answer_last_hour"`
	// GateUntil is when the API's last Retry-After ends, while it has not.
	GateUntil *time.Time `json:"gate_until,omitempty"`
}

func newAPIWindow() *apiWindow { return &apiWindow{} }

func (a *apiWindow) observe(info acs.RequestInfo) {
	m := time.Now().Unix() / 60
	a.mu.Lock()
	defer a.mu.Unlock()
	b := &a.buckets[m%60]
	if b.minute != m {
		*b = apiMinute{minute: m}
	}
	b.requests++
	switch {
	case info.Status == 429:
		b.r429++
	case info.Status >= 500:
		b.r5xx++
	case info.Status == 0:
		b.noAnswer++
	}
}

func (a *apiWindow) state(now time.Time) APIState {
	m := now.Unix() / 60
	var s APIState
	recent := 0
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range a.buckets {
		if b.minute <= m-60 || b.minute > m {
			continue
		}
		s.Requests += b.requests
		s.TooMany += b.r429
		s.ServerErr += b.r5xx
		s.NoAnswer += b.noAnswer
		if b.minute > m-5 {
			recent += b.requests
		}
	}
	s.PerMinute = float64(recent) / 5
	return s
}
