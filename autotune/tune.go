package autotune

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Job is one kernel group to tune: its problem, its candidates and how to run one of them.
type Job struct {
	Name       string // shown in progress, e.g. the group's name in the plan
	Problem    Problem
	Candidates []Candidate
	Run        func(Candidate) error
}

// Progress reports how far Tune has come, for a progress bar.
type Progress struct {
	Job, Jobs int    // the job in hand (0-based) and the number of jobs
	Name      string // the job's name
	Runs, Of  int    // runs done and planned for this job
	Record    *Record
	Err       error // the job failed (every candidate failed to run)
	Finished  bool  // the job is done (Record or Err is set)
}

// Tune measures every job's candidates (Measure), records each winner and every timing in the
// store under the job's Key, and returns the records in job order. opts.Budget is the budget
// of the whole run, shared evenly among the jobs not yet done. A job whose candidates all fail
// is reported through progress and skipped; Tune fails only if ctx ends or no job succeeds.
func (t *Tuner) Tune(ctx context.Context, jobs []Job, opts MeasureOptions, progress func(Progress)) ([]Record, error) {
	opts = opts.withDefaults()
	report := func(p Progress) {
		if progress != nil {
			progress(p)
		}
	}
	start := opts.Clock()
	var records []Record
	var failures []string
	for j, job := range jobs {
		jobOpts := opts
		if opts.Budget > 0 {
			left := opts.Budget - opts.Clock().Sub(start)
			jobOpts.Budget = max(left/time.Duration(len(jobs)-j), time.Nanosecond)
		}
		timings, err := Measure(ctx, job.Candidates, job.Run, jobOpts, func(done, total int) {
			report(Progress{Job: j, Jobs: len(jobs), Name: job.Name, Runs: done, Of: total})
		})
		if ctxErr := ctx.Err(); ctxErr != nil {
			return records, ctxErr
		}
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", job.Name, err))
			t.warnf("tuning %s: %v", job.Name, err)
			report(Progress{Job: j, Jobs: len(jobs), Name: job.Name, Err: err, Finished: true})
			continue
		}
		ranking := RankByTime(timings)
		rec := Record{
			Format:     recordFormat,
			Key:        Key(job.Problem, job.Candidates),
			Problem:    job.Problem,
			Candidates: job.Candidates,
			Winner:     ranking[0],
			Source:     sourceMeasured,
			Ranking:    ranking,
			Timings:    timings,
		}
		t.record(rec)
		records = append(records, rec)
		report(Progress{Job: j, Jobs: len(jobs), Name: job.Name, Record: &rec, Finished: true})
	}
	if len(records) == 0 && len(jobs) > 0 {
		return nil, fmt.Errorf("autotune: no job could be tuned: %s", strings.Join(failures, "; "))
	}
	return records, nil
}
