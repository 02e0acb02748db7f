package main

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/internal/config"
	"github.com/widejit/widejit/internal/engine"
)

func newInfoCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "info",
		Short: "Print the build and the registered backends: whether each opens here, and its capabilities",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := config.BackendOptions(a.v)
			if err != nil {
				return usagef("%v", err)
			}
			lines := engine.BackendStatus(a.v.GetInt("threads"), opts)
			_, err = fmt.Fprintf(a.stdout, "widejit %s\ngo: %s %s/%s (%d cores)\nbackends:\n  %s\nfloat32 matmul precision: %s (GPUs only: backends on host threads, the cpu's, always compute fp32 matmuls in IEEE fp32)\n",
				buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), strings.Join(lines, "\n  "),
				a.v.GetString("float32_matmul_precision"))
			return err
		},
	}
}
