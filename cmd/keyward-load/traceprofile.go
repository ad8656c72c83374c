package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/trace"
)

// traceFile, set by -trace, receives an execution trace of the run -profile-run names
// (connect: the opening of -idle-sockets), for `go tool trace`: where the server waited
// while the sockets opened (a run whose opening took twice as long with the same CPU).
var traceFile string

func init() {
	flag.StringVar(&traceFile, "trace", "", "with -profile-run connect, write an execution trace of that run to this file (go tool trace)")
}

// startTrace starts the execution trace, when -trace is set, and answers its stop.
func startTrace() (stop func()) {
	if traceFile == "" {
		return func() {}
	}
	f, err := os.Create(traceFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "keyward-load:", err)
		return func() {}
	}
	if err := trace.Start(f); err != nil {
		fmt.Fprintln(os.Stderr, "keyward-load:", err)
		_ = f.Close()
		return func() {}
	}
	return func() { trace.Stop(); _ = f.Close() }
}
