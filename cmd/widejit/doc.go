// Command widejit runs N models of one architecture as one wide model.
//
// It is a thin layer of flags and printing: the command tree is built explicitly in
// root.go (each command adds its own flags and subcommands), the configuration is layered by
// internal/config, and the work is done behind the public API (package widejit, through
// internal/runjob for `run`) and internal packages: internal/engine (graph explain, tune,
// cache populate, cache maintenance), internal/kerneltool (kernel run, ir, dump --arch),
// internal/outputs (output files: writing, merge, checks) and packages cache, graph and
// plugins for what they own. Errors marked by internal/errkind choose the exit code: 1 the
// work failed, 2 usage, 3 an input file, 4 run --check found a mismatch. SIGINT and SIGTERM
// cancel the command's context and remove unfinished outputs (signals.go): exit 130 or 143.
package main
