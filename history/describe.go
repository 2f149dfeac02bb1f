package history

import (
	"fmt"
	"strings"
	"time"
)

// Describe says in words what an event means for the item, for the console
// and feedworker explain. now is for "next try in ...".
func Describe(e Event, now time.Time) string {
	var s string
	switch e.Kind {
	case Queued:
		s = "new: waiting in the outbox for its first send"
	case Changed:
		s = "changed: an update is waiting in the outbox"
		if len(e.Fields) > 0 {
			s = "changed (" + strings.Join(e.Fields, ", ") + "): an update is waiting in the outbox"
		}
	case Unchanged:
		s = "unchanged: nothing to send"
	case SeenOnly:
		s = "not published: older than initial_items when the feed was first seen (feedworker backfill can publish it)"
	case Filtered:
		s = "filtered: " + e.Detail
	case MapFailed:
		s = "not mapped: " + e.Detail
	case Published:
		s = fmt.Sprintf("published as content %d", e.ContentID)
	case Updated:
		s = fmt.Sprintf("updated content %d", e.ContentID)
	case Recovered:
		s = fmt.Sprintf("found at the API as content %d after a send with no clear answer", e.ContentID)
	case Reconciled:
		s = fmt.Sprintf("found at the API as content %d (reconciled)", e.ContentID)
	case Removed:
		s = "deleted on the service; left alone"
	case Repost:
		s = e.Detail
	case Retrying:
		s = fmt.Sprintf("send failed (attempt %d%s): %s", e.Attempt, status(e.Status), e.Detail)
		if nx := e.NextTime(); !nx.IsZero() {
			if d := nx.Sub(now); d > 0 {
				s += fmt.Sprintf("; next try in %s", Since(-d))
			} else {
				s += "; due again now"
			}
		}
	case DeadLetter:
		s = fmt.Sprintf("dead letter after %d attempts%s: %s", e.Attempt, status(e.Status), e.Detail)
	default:
		s = string(e.Kind)
		if e.Detail != "" {
			s += ": " + e.Detail
		}
	}
	if e.Count > 1 {
		s += fmt.Sprintf(" (%d times in a row)", e.Count)
	}
	return s
}

func status(code int) string {
	if code == 0 {
		return ""
	}
	return fmt.Sprintf(", HTTP %d", code)
}

// Since is a duration in the words of "4 min ago": the largest unit only.
func Since(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

// Class is the kind's tone on the console: ok, wait, muted, warn or bad.
func (k Kind) Class() string {
	switch k {
	case Published, Updated, Recovered, Reconciled:
		return "ok"
	case Queued, Changed, Retrying:
		return "wait"
	case Unchanged, SeenOnly, Removed, Repost:
		return "muted"
	case Filtered:
		return "warn"
	}
	return "bad"
}
