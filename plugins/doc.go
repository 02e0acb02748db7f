// Package plugins is widejit's host for strategy plugins: WebAssembly modules that rank the
// candidate kernels of a kernel group. It loads a module with wazero, checks the ABI
// (plugins/abi), keeps a pool of initialised instances, and calls them inside a sandbox:
// a memory cap, a per-call deadline, a bound on what it reads back, and no files,
// environment, arguments, network, real clock or real randomness.
//
// Loading is bounded too: the module must be a regular file within Options.MaxModuleBytes and
// compile within Options.CompileTimeout (wazero cannot stop compiling one function, so a slow
// compile is abandoned to finish in the background); a compilation cache that is corrupt is
// cleared and the module recompiled, with a warning through Options.Warn.
//
// Every failure of a plugin comes back as an *Error naming the plugin and the reason (Kind);
// the host never panics or blocks past the deadline because of a plugin. The autotuner turns
// such an error into a warning and lets the built-in heuristic decide.
//
// CheckSamples and Ask are `widejit plugin check`: sample requests, and a chooser's answers
// to them with their latencies.
//
// Subpackages: abi (the JSON schema shared with guests), sdk (the Go SDK for plugin authors),
// treefit (the decision-tree fitter behind examples/tree), examples (plugins to copy).
package plugins
