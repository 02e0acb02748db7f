package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func init() { register("info", newInfoCmd) }

// cudaStatus describes the CUDA backend in one line ("available: ..." or "not available:
// why"). The CUDA backend replaces it from its own file when it is built in.
var cudaStatus = func() string {
	return "not available: the CUDA backend is not built yet"
}

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
			_, err := fmt.Fprintf(a.stdout, "widejit %s\ngo: %s %s/%s\nbackends:\n  cpu: available (%d cores, %s)\n  cuda: %s\n",
				buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), workers, cudaStatus())
			return err
		},
	}
}
