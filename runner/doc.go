// Package runner executes a plan (package lowering) on a device (package jit): New compiles
// every kernel, allocates the plan's buffers, uploads the parameters and runs the prepare
// launches; Run uploads inputs, launches the plan and downloads the outputs, as often as
// needed. It also bounds what a run may do (Options: memory, launch time), times launches
// (Profile) and records them as a Chrome trace (Tracer). On a device that can use host
// memory in place (a jit.HostBinder: the CPU) a run copies nothing: input buffers read the
// caller's tensors for the length of the run (kernels write only temp buffers), and the
// kernels write each output a buffer holds whole into the memory returned to the caller (the
// tensor given to RunInto), unless it overlaps an input read in place.
//
// On a device with streams (a jit.StreamDevice: CUDA), a run's N models are split over several
// streams (Options.Streams; one by default; streams.go): each uploads its models' input rows
// from pinned staging, launches every kernel of the plan over its models and downloads their
// output rows, with events where streams depend on each other and one synchronisation per
// run. Runner.ExplainStreams and the trace (a track per stream) show the schedule.
//
//	plan, err := lowering.Lower(g, lowering.Options{})  // plan only: kernels, buffers, launches
//	r, err := runner.New(plan, dev, compiler, g)        // compile, allocate, upload weights
//	outs, err := r.Run(inputs)                          // repeatable; inputs/outputs [N, ...]
//
// Lowering plans and runner executes, so a plan can be inspected, dumped and tested without
// a device; runner imports lowering, never the reverse (lowering's tests that run plans get
// a runner through lowering/exec_test.go, an external test file).
// (It is called runner, not runtime, so as not to shadow the standard library's package.)
// Programs use the public API, package widejit, which does all of this.
package runner
