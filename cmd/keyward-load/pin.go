package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// -vs-pin: in the side-by-side broadcast runs the server and the load's socket readers
// each get CPU cores of their own, so that neither server's figures include the 500
// readers' work on the same cores. The server side is this process (Keyward runs in it,
// and it publishes to Centrifugo) and the Centrifugo process; the readers are the
// fan-out child. Both servers are pinned the same way, with GOMAXPROCS the number of
// their cores.
var versusPin string

// cpuPin is the parsed -vs-pin: the cores of the server side and of the readers (each a
// taskset list); both empty when the runs are not pinned.
type cpuPin struct{ server, readers string }

// pins is this run's cpuPin.
var pins cpuPin

// parsePin reads -vs-pin: "SERVER/READERS", each a taskset core list ("0/1", "0-1/2-3");
// "" or "off": not pinned.
func parsePin(spec string) (cpuPin, error) {
	if spec == "" || spec == "off" {
		return cpuPin{}, nil
	}
	server, readers, ok := strings.Cut(spec, "/")
	if !ok || server == "" || readers == "" {
		return cpuPin{}, fmt.Errorf("-vs-pin: %q is not SERVER/READERS core lists", spec)
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return cpuPin{}, fmt.Errorf("-vs-pin needs taskset (util-linux): %w", err)
	}
	return cpuPin{server: server, readers: readers}, nil
}

// coreCount answers how many cores a taskset list names ("0", "0-1", "0,2").
func coreCount(list string) int {
	n := 0
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, errA := strconv.Atoi(lo)
		b := a
		var errB error
		if isRange {
			b, errB = strconv.Atoi(hi)
		}
		if errA != nil || errB != nil || b < a {
			return 1
		}
		n += b - a + 1
	}
	return max(1, n)
}

// pinSelf pins every thread of this process to the server's cores (threads made later
// inherit it) and sets GOMAXPROCS to their number, as Centrifugo, started under taskset,
// sets its own. It runs before the node starts, so every part of it sizes itself to them.
func pinSelf(p cpuPin) error {
	if p.server == "" {
		return nil
	}
	out, err := exec.Command("taskset", "-a", "-p", "-c", p.server, strconv.Itoa(os.Getpid())).CombinedOutput()
	if err != nil {
		return fmt.Errorf("taskset this process to %s: %w: %s", p.server, err, out)
	}
	runtime.GOMAXPROCS(coreCount(p.server))
	return nil
}

// pinned answers the command line that runs name with args on cores (taskset), or as it
// is when cores is empty.
func pinned(cores, name string, args ...string) (string, []string) {
	if cores == "" {
		return name, args
	}
	return "taskset", append([]string{"-c", cores, name}, args...)
}
