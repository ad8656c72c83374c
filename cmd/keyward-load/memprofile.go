package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// allocProfileFile, set by -allocprofile, receives the allocations made during the run
// that -profile-run names (an "allocs" profile: read it with `go tool pprof
// -sample_index=alloc_space` or alloc_objects), beside that run's CPU profile.
var allocProfileFile string

func init() {
	flag.StringVar(&allocProfileFile, "allocprofile", "", "with -profile-run (connect too), write the allocations of that run to this file (pprof allocs profile, as a diff against the run's start)")
}

// allocProfiled records the allocations fn makes, when -allocprofile is set: a profile
// taken at the start is written to the file + ".before", so that `go tool pprof
// -diff_base FILE.before FILE` shows the run's own allocations.
func allocProfiled(fn func() result) result {
	if allocProfileFile == "" {
		return fn()
	}
	stop := startAllocProfile()
	r := fn()
	stop()
	return r
}

// startAllocProfile writes the allocations made so far to -allocprofile + ".before" and
// answers the function that writes them again, to -allocprofile, at the run's end.
func startAllocProfile() (stop func()) {
	runtime.MemProfileRate = 4096
	runtime.GC()
	if err := writeAllocs(allocProfileFile + ".before"); err != nil {
		fmt.Fprintln(os.Stderr, "keyward-load:", err)
	}
	return func() {
		runtime.GC()
		if err := writeAllocs(allocProfileFile); err != nil {
			fmt.Fprintln(os.Stderr, "keyward-load:", err)
		}
	}
}

func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}
