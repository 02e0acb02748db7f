package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/widejit/widejit/internal/outputs"
)

// interruptGrace is how long an interrupted command gets to stop by itself (closing the
// kernel cache cleanly) before the process exits anyway; a second signal ends it at once.
// Exiting while the cache is open is safe: the lock goes with the process and the next
// Open recovers the store as after a kill.
const interruptGrace = 3 * time.Second

// executeInterruptible is execute with SIGINT and SIGTERM handled: the first one cancels the
// command's context, removes the temporary files of outputs being written (the files they
// would replace stay as they were), waits up to interruptGrace for the command to stop, and
// exits 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).
func executeInterruptible(args []string, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- executeContext(ctx, args, stdout, stderr) }()
	var sig os.Signal
	select {
	case code := <-done:
		return code
	case sig = <-sigs:
	}
	cancel()
	removed := outputs.RemoveTemporaries()
	select {
	case <-done:
	case <-sigs:
	case <-time.After(interruptGrace):
	}
	removed = append(removed, outputs.RemoveTemporaries()...)
	fmt.Fprintf(stderr, "widejit: interrupted (%v)\n", sig)
	for _, tmp := range removed {
		fmt.Fprintf(stderr, "widejit: removed the unfinished %s; the file it was to replace is unchanged\n", tmp)
	}
	code := 130
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	return code
}
