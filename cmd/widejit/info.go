package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/internal/engine"
)

// cudaStatus describes the CUDA backend in one line ("available: ..." or "not available:
// why"); a variable so tests can stand in a GPU.
var cudaStatus = engine.CUDAStatus

func newInfoCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "info",
		Short: "Print the build and the backends this machine can use",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			threads := a.v.GetInt("threads")
			workers := fmt.Sprintf("%d workers", threads)
			if threads <= 0 {
				workers = "all cores"
			}
			_, err := fmt.Fprintf(a.stdout, "widejit %s\ngo: %s %s/%s\nbackends:\n  cpu: available (%d cores, %s; fp32 matmuls always IEEE fp32)\n  cuda: %s\nfloat32 matmul precision: %s (GPUs only)\n",
				buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), workers, cudaStatus(),
				a.v.GetString("float32_matmul_precision"))
			return err
		},
	}
}
