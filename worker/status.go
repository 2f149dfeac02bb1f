package worker

import (
	"time"

	"github.com/feedworker/feedworker/feeds"
	"github.com/feedworker/feedworker/history"
)

// Status is what the status page and /status.json show.
type Status struct {
	Version   string       `json:"version"`
	Generated *time.Time   `json:"generated"`
	Feeds     []FeedStatus `json:"feeds"`
	Outbox    int64        `json:"outbox"`
	// WaitingForDeadOwner counts outbox items still claimed by a worker
	// whose heartbeat is gone; the next claim takes them.
	WaitingForDeadOwner int          `json:"waiting_for_dead_owner"`
	DeadLetters         []DeadLetter `json:"dead_letters"`
	// API is the API's last hour as this process saw it.
	API APIState `json:"api"`
	// ReadOnly is set when admin.token is not: the console takes no action.
	ReadOnly bool `json:"read_only"`
	// Hours are the last 24 hours of published, updated and failed sends
	// and of the outbox depth, oldest first (empty if the history is
	// unreadable).
	Hours []history.Hour `json:"hours"`
	// Unreadable lists, per feed and cause, the API's 2xx answers this
	// process could not read.
	Unreadable []UnreadableAnswer `json:"unreadable_answers"`
	// Pacing is how the worker paces itself to the service.
	Pacing *APIStatus `json:"pacing"`
	// Held lists the feeds whose items the flood guard holds (held.go).
	Held []HeldFeed `json:"held"`
	// Stale is set when the store did not answer: the page is the last
	// known state, from Generated, and StoreProblem says why.
	Stale        bool   `json:"stale"`
	StoreProblem string `json:"store_problem,omitempty"`
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
	// Warnings are the feed-level warnings in force (moved, GUID reuse,
	// document cut short, charset guessed, …).
	Warnings []feeds.Warning `json:"warnings,omitempty"`
	// RecentPolls are the feed's last polls from the history, oldest first.
	RecentPolls []history.Poll `json:"recent_polls,omitempty"`
}

// Healthy reports whether the last poll succeeded (or none happened yet).
func (f FeedStatus) Healthy() bool {
	return f.LastResult == "" || f.LastResult == "ok" || f.LastResult == "not_modified"
}

// DeadLetter is one item the API refused for good.
type DeadLetter struct {
	ID     string `json:"id"`
	FeedID string `json:"feed_id"`
	Type   string `json:"type"`
	Title  string `json:"title"`
	Reason string `json:"reason"`
	// Status is the API's HTTP status (0: no answer).
	Status   int        `json:"status,omitempty"`
	Attempts int        `json:"attempts,omitempty"`
	At       *time.Time `json:"at,omitempty"`
}
