// Package deploy holds example manifests for running widejit's shards on existing
// schedulers (docs/cluster.md): a Kubernetes Indexed Job in kubernetes/ and a Slurm job
// array in slurm/. It has no Go code; its tests check that the manifests parse, agree with
// one another, and call widejit with flags that exist.
package deploy
