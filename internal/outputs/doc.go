// Package outputs owns the files a run's outputs go to and come from: writing them without
// ever losing one of the user's files (Write; RemoveTemporaries for an interrupted process),
// their metadata (which models of which graph, on which inputs: Metadata, InputsFile,
// InputsGenerated), stacking the parts of sharded runs back together (Merge, streamed), and
// comparing outputs with expected ones (ReadExpected, Compare).
package outputs
