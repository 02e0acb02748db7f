package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/internal/engine"
)

// buildVersion names this build in the kernel cache's keys (engine.BuildVersion).
var buildVersion = engine.BuildVersion

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the widejit version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(a.stdout, "widejit %s\n", buildVersion())
			return err
		},
	}
}
