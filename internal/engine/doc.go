// Package engine is the orchestration that the public API (package widejit) and the CLI's
// commands share: it opens a device and the kernel cache, loads strategy plugins into the
// autotuner, and lowers graphs (Config, Tuning, PlanOptions). It also does the work of the
// CLI's commands that reach below the public API: explaining a plan (Config.Explain),
// tuning (Config.Tune), compiling kernels ahead of time (Config.Populate) and opening the
// cache for maintenance. It holds no state between calls; plans are executed by package
// runner.
package engine
