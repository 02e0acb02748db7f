package autotune

import (
	"fmt"
	"strings"
	"time"
)

// Explain says in one line what was chosen and why, for `widejit run --explain`, e.g.
//
//	bat-64 by recorded measurement: 3.00ms median of 3 runs (next: bat-32 4.00ms)
//	fused by plugin:rules.wasm (recorded answer): N=8 >= 4 and hidden 256 <= 1024: fuse
//	seq by heuristic
func (d Decision) Explain() string {
	var b strings.Builder
	b.WriteString(d.CandidateID)
	switch {
	case d.Source == SourceRecorded:
		b.WriteString(" by recorded measurement")
		byID := map[string]Timing{}
		for _, t := range d.Timings {
			byID[t.CandidateID] = t
		}
		if t, ok := byID[d.CandidateID]; ok {
			fmt.Fprintf(&b, ": %s median of %d runs", millis(t.Median), t.Samples)
			if len(d.Ranking) > 1 {
				if next, ok := byID[d.Ranking[1]]; ok {
					fmt.Fprintf(&b, " (next: %s %s)", next.CandidateID, millis(next.Median))
				}
			}
		}
	default:
		b.WriteString(" by " + d.Source)
		if d.Reused {
			b.WriteString(" (recorded answer)")
		}
		if d.Note != "" {
			b.WriteString(": " + d.Note)
		}
	}
	return b.String()
}

func millis(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}
