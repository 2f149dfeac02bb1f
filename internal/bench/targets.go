package bench

import (
	"fmt"
	"io"
)

// Target is one of issue 13's performance goals as this run measured it.
// The goals are stated at given farm sizes; a run of another shape
// reports only the ones that do not depend on it.
type Target struct {
	Goal     int     `json:"goal"`
	What     string  `json:"what"`
	Store    string  `json:"store,omitempty"`
	Measured float64 `json:"measured"`
	Limit    float64 `json:"limit"`
	Unit     string  `json:"unit"`
	Met      bool    `json:"met"`
}

// mib is a MiB in MB: the goals give memory in MB, VmHWM counts KiB.
const mib = 1.048576

// targets evaluates the goals the run's shape allows, from the medians
// (ratios are medians of the ratios within each run, as in Ratios).
func (r *Report) targets() []Target {
	var out []Target
	add := func(goal int, what, store string, v, limit float64, unit string) {
		if v <= 0 {
			return // not measured in this run
		}
		out = append(out, Target{Goal: goal, What: what, Store: store, Measured: v, Limit: limit, Unit: unit, Met: v <= limit})
	}
	o := r.Options
	add(1, "cycle 1 wall, embedded / Redis", "", r.Ratios.EmbeddedVsRedisWall, 1.25, "×")
	add(1, "cycle 1 worker CPU, embedded / Redis", "", r.Ratios.EmbeddedVsRedisCPU, 1.25, "×")
	for _, st := range r.Stores {
		add(2, "cycle 1 worker CPU / gofeed floor CPU", st.Store, r.Ratios.CPUVsFloor[st.Store], 2, "×")
	}
	for _, st := range r.Stores {
		if len(st.Median) == 0 {
			continue
		}
		c1 := st.Median[0]
		switch {
		case o.Feeds == 5000 && o.Items == 20:
			add(3, "cycle 1 peak RSS at 5,000 × 20", st.Store, c1.PeakRSSMB*mib, 80, "MB")
		case o.Feeds == 20000 && o.Items == 20:
			add(3, "cycle 1 peak RSS at 20,000 × 20", st.Store, c1.PeakRSSMB*mib, 200, "MB")
		}
		if o.Feeds == 1000 && len(st.Median) > 1 && st.Median[1].Cycle == 2 {
			add(5, "all-304 pass (worker.Once) for 1,000 feeds", st.Store, st.Median[1].Phases.Pass, 0.15, "s")
		}
	}
	return out
}

// writeTargets writes the goals this run measured, one a line.
func writeTargets(w io.Writer, ts []Target) {
	if len(ts) == 0 {
		return
	}
	fmt.Fprintln(w, "\ntargets (issue 13; stated at 1,000 × 20 unless named; goal 3's CPU per item compares two runs; goal 4 is BenchmarkQuickstart):")
	for _, t := range ts {
		verdict := "met"
		if !t.Met {
			verdict = "NOT met"
		}
		store := ""
		if t.Store != "" {
			store = " (" + t.Store + ")"
		}
		fmt.Fprintf(w, "  goal %d  %s%s: %s, target ≤ %s: %s\n", t.Goal, t.What, store,
			withUnit(fmt.Sprintf("%.3g", t.Measured), t.Unit), withUnit(fmt.Sprintf("%g", t.Limit), t.Unit), verdict)
	}
}

func withUnit(v, unit string) string {
	if unit == "×" {
		return v + unit
	}
	return v + " " + unit
}
