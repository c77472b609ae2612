package supervisor

import (
	"slices"
	"time"
)

// RestoreWindow rebuilds a stored sliding window from the times of its
// matches. Only the runtime that keeps windows with its signal cursor calls
// it; Record prunes whatever no longer falls in the window.
func RestoreWindow(times []time.Time) Window {
	out := slices.Clone(times)
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return Window{times: out}
}

// Times returns a copy of the times of the window's matches, oldest first.
func (w Window) Times() []time.Time { return slices.Clone(w.times) }

// Latest returns the time of the newest match (the zero time for an empty
// window).
func (w Window) Latest() time.Time {
	var latest time.Time
	for _, t := range w.times {
		if t.After(latest) {
			latest = t
		}
	}
	return latest
}
