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

var _ feeds.BatchStateHandler = (*Worker)(nil)

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
	return fromStore(s), true, nil
}

// PollStatesAll implements feeds.BatchStateHandler: a pass over every
// feed loads their poll states in one store round trip.
func (w *Worker) PollStatesAll(ctx context.Context, feedIDs []string) (map[string]feeds.PollState, error) {
	out := make(map[string]feeds.PollState, len(feedIDs))
	pb, ok := w.store.(dedupe.PollStatesBatcher)
	if !ok {
		for _, id := range feedIDs {
			s, found, err := w.PollState(ctx, id)
			if err != nil {
				return nil, err
			}
			if found {
				out[id] = s
			}
		}
		return out, nil
	}
	states, found, err := pb.PollStatesMany(ctx, feedIDs)
	if err != nil {
		return nil, err
	}
	for i, id := range feedIDs {
		if found[i] {
			out[id] = fromStore(states[i])
		}
	}
	return out, nil
}

func fromStore(s dedupe.PollState) feeds.PollState {
	out := feeds.PollState{URL: s.URL, NotBefore: s.NotBefore, Failures: s.Failures, GoneConfig: s.GoneConfig, MovedTo: s.MovedTo}
	for _, code := range slices.Sorted(maps.Keys(s.Warnings)) {
		out.Warnings = append(out.Warnings, feeds.Warning{Code: code, Message: s.Warnings[code]})
	}
	return out
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
