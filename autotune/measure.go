package autotune

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// MeasureOptions control timing. Zero values take the defaults.
type MeasureOptions struct {
	Warmup int           // untimed runs of each candidate first (default 1)
	Reps   int           // timed runs of each candidate (default 5)
	Budget time.Duration // stop timing after the round that crosses it (0: no limit); at least one timed round always runs
	// Clock reads the time; nil means time.Now. Tests substitute a fake.
	Clock func() time.Time
}

func (o MeasureOptions) withDefaults() MeasureOptions {
	if o.Warmup <= 0 {
		o.Warmup = 1
	}
	if o.Reps <= 0 {
		o.Reps = 5
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o
}

// Measure times each candidate with run, which must execute the candidate once and return
// when it has finished (on a GPU: after synchronising). It runs Warmup untimed rounds, then up
// to Reps timed rounds; each round runs every live candidate once, starting one candidate
// later than the previous round, so drift on a shared machine affects all candidates alike.
// A candidate whose run fails is dropped and reported in its Timing's Err. The result is one
// Timing per candidate, in the candidates' order, with the median of its samples. progress,
// if not nil, is called after every run with the runs done and the runs planned.
func Measure(ctx context.Context, candidates []Candidate, run func(Candidate) error, opts MeasureOptions, progress func(done, total int)) ([]Timing, error) {
	if err := checkCandidates(candidates); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	timings := make([]Timing, len(candidates))
	samples := make([][]time.Duration, len(candidates))
	for i, c := range candidates {
		timings[i].CandidateID = c.ID
	}
	rounds := opts.Warmup + opts.Reps
	total, done := rounds*len(candidates), 0
	start := opts.Clock()
	for round := 0; round < rounds; round++ {
		timed := round >= opts.Warmup
		if timed && round > opts.Warmup && opts.Budget > 0 && opts.Clock().Sub(start) >= opts.Budget {
			break
		}
		for k := range candidates {
			i := (k + round) % len(candidates)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if timings[i].Err != "" {
				continue
			}
			t0 := opts.Clock()
			err := run(candidates[i])
			elapsed := opts.Clock().Sub(t0)
			if err != nil {
				timings[i].Err = err.Error()
			} else if timed {
				samples[i] = append(samples[i], elapsed)
			}
			done++
			if progress != nil {
				progress(done, total)
			}
		}
	}
	alive := 0
	for i := range timings {
		if timings[i].Err != "" {
			continue
		}
		alive++
		timings[i].Samples = len(samples[i])
		timings[i].Median = median(samples[i])
	}
	if alive == 0 {
		return timings, fmt.Errorf("autotune: every candidate failed to run; %s: %s", timings[0].CandidateID, timings[0].Err)
	}
	return timings, nil
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// RankByTime orders the candidates that ran by median time, fastest first; ties keep the
// timings' order. Failed candidates are left out.
func RankByTime(timings []Timing) []string {
	ok := make([]Timing, 0, len(timings))
	for _, t := range timings {
		if t.Err == "" {
			ok = append(ok, t)
		}
	}
	slices.SortStableFunc(ok, func(a, b Timing) int {
		switch {
		case a.Median < b.Median:
			return -1
		case a.Median > b.Median:
			return 1
		}
		return 0
	})
	ids := make([]string, len(ok))
	for i, t := range ok {
		ids[i] = t.CandidateID
	}
	return ids
}
