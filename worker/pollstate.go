package worker

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/feeds"
)

// errNoPollStates: the store keeps no poll states (both stores do; a
// store wrapper that hid them would make restarts forget backoffs, and
// the poller logs this error when it stores a state).
var errNoPollStates = errors.New("the store keeps no poll states")

var _ feeds.StateHandler = (*Worker)(nil)

// PollState implements feeds.StateHandler: the feed's poll state as the
// store keeps it beside the validators.
func (w *Worker) PollState(ctx context.Context, feedID string) (feeds.PollState, bool, error) {
	ps, ok := w.store.(dedupe.PollStates)
	if !ok {
		// Nothing was kept: poll as a fresh start would. SetPollState says
		// why nothing is.
		return feeds.PollState{}, false, nil
	}
	s, found, err := ps.PollState(ctx, feedID)
	if err != nil || !found {
		return feeds.PollState{}, false, err
	}
	out := feeds.PollState{URL: s.URL, NotBefore: s.NotBefore, Failures: s.Failures, GoneConfig: s.GoneConfig, MovedTo: s.MovedTo}
	for _, code := range slices.Sorted(maps.Keys(s.Warnings)) {
		out.Warnings = append(out.Warnings, feeds.Warning{Code: code, Message: s.Warnings[code]})
	}
	return out, true, nil
}

// SetPollState implements feeds.StateHandler.
func (w *Worker) SetPollState(ctx context.Context, feedID string, s feeds.PollState) error {
	ps, ok := w.store.(dedupe.PollStates)
	if !ok {
		return errNoPollStates
	}
	st := dedupe.PollState{URL: s.URL, NotBefore: s.NotBefore, Failures: s.Failures, GoneConfig: s.GoneConfig, MovedTo: s.MovedTo}
	for _, wn := range s.Warnings {
		if st.Warnings == nil {
			st.Warnings = map[string]string{}
		}
		st.Warnings[wn.Code] = cmp.Or(st.Warnings[wn.Code], wn.Message)
	}
	return ps.SetPollState(ctx, feedID, st)
}
