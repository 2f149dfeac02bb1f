package worker

import "time"

// Status is what the status page and /status.json show.
type Status struct {
	Version     string       `json:"version"`
	Generated   *time.Time   `json:"generated"`
	Feeds       []FeedStatus `json:"feeds"`
	Outbox      int64        `json:"outbox"`
	DeadLetters []DeadLetter `json:"dead_letters"`
	// Unreadable lists, per feed and cause, the API's 2xx answers this
	// process could not read.
	Unreadable []UnreadableAnswer `json:"unreadable_answers"`
}

// UnreadableAnswer is one feed and cause of answers the client could not
// read.
type UnreadableAnswer struct {
	FeedID string     `json:"feed_id"`
	Cause  string     `json:"cause"`
	Count  int64      `json:"count"`
	Reason string     `json:"reason"`
	Last   *time.Time `json:"last,omitempty"`
}

// FeedStatus is one feed's row.
type FeedStatus struct {
	ID         string     `json:"id"`
	URL        string     `json:"url"`
	MovedTo    string     `json:"moved_to,omitempty"`
	Enabled    bool       `json:"enabled"`
	Gone       bool       `json:"gone"`
	LastPoll   *time.Time `json:"last_poll,omitempty"`
	LastResult string     `json:"last_result,omitempty"`
	NextPoll   *time.Time `json:"next_poll,omitempty"`
	Failures   int        `json:"failures"`
	Published  int64      `json:"published"`
	LastError  string     `json:"last_error,omitempty"`
}

// Healthy reports whether the last poll succeeded (or none happened yet).
func (f FeedStatus) Healthy() bool {
	return f.LastResult == "" || f.LastResult == "ok" || f.LastResult == "not_modified"
}

// DeadLetter is one item the API refused for good.
type DeadLetter struct {
	ID     string     `json:"id"`
	FeedID string     `json:"feed_id"`
	Type   string     `json:"type"`
	Title  string     `json:"title"`
	Reason string     `json:"reason"`
	At     *time.Time `json:"at,omitempty"`
}
