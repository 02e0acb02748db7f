package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/widejit/widejit/internal/errkind"
)

// app is what every command shares: the layered configuration and the output streams.
type app struct {
	v      *viper.Viper
	stdout io.Writer
	stderr io.Writer
}

// Exit codes, documented in --help and the README.
const (
	exitFailure = 1 // the work failed: a kernel, the device, the cache, a bug
	exitUsage   = 2 // how widejit was called: flags, arguments, configuration
	exitInput   = 3 // a graph, weights, inputs, expected or merged part file is missing or invalid
	exitCheck   = 4 // run --check: outputs differ from the expected ones beyond the tolerance
)

const exitCodesHelp = `Exit codes: 0 success; 1 the work failed (a kernel, the device, the cache);
2 usage (flags, arguments, configuration); 3 an input file (graph, weights, inputs, expected
outputs, merge's parts) is missing or invalid, or the inputs pass the memory limit;
4 run --check found outputs beyond the tolerance; 130 and 143 interrupted by SIGINT and SIGTERM
(unfinished outputs removed).`

// usageError (exit code 2) and inputError (exit code 3) are errkind's, so that the work
// behind a command can say which it met.
type (
	usageError = errkind.Usage
	inputError = errkind.Input
)

var usagef = errkind.Usagef

// warn prints a warning to stderr, as printable as errors are.
func (a *app) warn(msg string) {
	fmt.Fprintf(a.stderr, "widejit: warning: %s\n", errkind.Printable(msg))
}

// exitCodeError lets a command choose its exit code after it has printed its own report
// (for example `run --check` on a mismatch).
type exitCodeError struct {
	code int
	err  error
}

func (e exitCodeError) Error() string { return e.err.Error() }

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "widejit",
		Short:         "Run N models of one architecture as one wide model, with generated kernels",
		Long:          "Run N models of one architecture as one wide model, with generated kernels.\n\n" + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return loadConfig(a, cmd)
		},
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{Err: err} })
	addGlobalFlags(a, root)
	// the whole tree, built explicitly and afresh on every execute (tests call it repeatedly):
	// each command adds its own flags and subcommands
	root.AddCommand(newCacheCmd(a), newConfigCmd(a), newGraphCmd(a), newInfoCmd(a), newKernelCmd(a),
		newMergeCmd(a), newPluginCmd(a), newRunCmd(a), newTuneCmd(a), newVersionCmd(a))
	wrapArgValidators(root)
	return root
}

// wrapArgValidators turns cobra's positional-argument errors into usage errors.
func wrapArgValidators(c *cobra.Command) {
	if c.Args != nil {
		inner := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := inner(cmd, args); err != nil {
				return usageError{Err: err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgValidators(sub)
	}
}

// execute runs widejit with args and returns the process exit code.
func execute(args []string, stdout, stderr io.Writer) int {
	return executeContext(context.Background(), args, stdout, stderr)
}

// executeContext is execute under ctx: commands stop when it is canceled.
func executeContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{v: viper.New(), stdout: stdout, stderr: stderr}
	root := newRootCmd(a)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ce exitCodeError
	if errors.As(err, &ce) {
		if ce.err != nil && ce.err.Error() != "" {
			fmt.Fprintf(stderr, "widejit: %s\n", errkind.Printable(ce.err.Error()))
		}
		return ce.code
	}
	// every error is printed here, with the paths and names it quotes from files escaped
	fmt.Fprintf(stderr, "widejit: %s\n", errkind.Printable(err.Error()))
	var ue usageError
	var ie inputError
	switch {
	case errors.As(err, &ue) || isCobraUsageError(err):
		fmt.Fprintln(stderr, "Run 'widejit --help' for usage.")
		return exitUsage
	case errors.As(err, &ie):
		return exitInput
	}
	return exitFailure
}

// isCobraUsageError recognises the errors cobra returns itself for unknown commands.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	return len(msg) > 16 && msg[:16] == "unknown command "
}
