// Package autotune chooses, for each kernel group of a plan, which candidate kernel to run.
//
// Decision sources, in order (Tuner.Decide):
//  1. a recorded measurement for the problem's key (DecisionStore; `widejit tune` fills it
//     through Tuner.Tune, which times candidates with Measure);
//  2. the configured strategy plugins (plugins/), in order; a plugin's answer is recorded too,
//     under a key that includes the plugin's hash, and reused while the plugin is unchanged;
//     a failing plugin is a warning, never an error;
//  3. the Heuristic the caller supplies (lowering owns the built-in one).
//
// autotune knows candidates only as ids, strategies and parameters; lowering generates them
// and runs them. The store is an interface so that autotune does not depend on cache/.
package autotune
