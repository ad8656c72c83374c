package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/server"
)

// selectedRuns, set by -runs, names the only runs made: init, license, licseq (init +
// nonce + license) and appupdate (owner app updates through the apps service, the
// change's store write with its event). For alternating a build with another one:
// each run's rate and p50/p99.
var selectedRuns string

// knownRuns are the names -runs accepts.
var knownRuns = []string{"init", "license", "licseq", "appupdate"}

func parseRuns(list string) ([]string, error) {
	var out []string
	for _, r := range strings.Split(list, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !slices.Contains(knownRuns, r) {
			return nil, fmt.Errorf("-runs: unknown run %q (known: %s)", r, strings.Join(knownRuns, ", "))
		}
		out = append(out, r)
	}
	return out, nil
}

// runSelected makes the runs of -runs, in the order given.
func runSelected(ctx context.Context, core *server.Core, c *client, owner apps.Owner, appID, secret string, runs []string,
	conc int, d time.Duration) error {
	base := 0
	var lic, licSeq *result
	var licCPU, licSeqCPU time.Duration
	for _, name := range runs {
		switch name {
		case "init":
			from := base
			cpu := processCPU()
			r := profiled("init", func() result {
				return load("client init", conc, d, func(_, i int) (time.Duration, error) {
					start := time.Now()
					_, err := c.initSession(secret, from+i)
					return time.Since(start), err
				})
			})
			base += r.ops + r.errs + conc
			printWithCPU(r, processCPU()-cpu)
		case "license", "licseq":
			if lic == nil {
				// Enough keys for 4,000 logins a second of each kind.
				n := int(4000 * d.Seconds())
				l, s, next, err := licenseRuns(ctx, core, c, owner, appID, secret, base, n, n, conc, d)
				if err != nil {
					return err
				}
				lic, licSeq, base = &l, &s, next
				licCPU, licSeqCPU = l.cpu, s.cpu
			}
			if name == "license" {
				printWithCPU(*lic, licCPU)
			} else {
				printWithCPU(*licSeq, licSeqCPU)
			}
		case "appupdate":
			cpu := processCPU()
			r := profiled("appupdate", func() result {
				return load("app update", conc, d, func(_, i int) (time.Duration, error) {
					desc := fmt.Sprintf("update %d", i)
					start := time.Now()
					_, err := core.Apps.UpdateApp(ctx, owner, appID, apps.UpdateAppInput{Description: &desc})
					return time.Since(start), err
				})
			})
			printWithCPU(r, processCPU()-cpu)
		}
	}
	return nil
}

// processCPU is the CPU time (user + system) this process used so far: the node and the
// load's clients run in it, so the CPU per operation of a run is a figure that a machine
// loaded by others changes less than the rate.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func printWithCPU(r result, cpu time.Duration) {
	fmt.Println(r)
	if n := r.ops + r.errs; n > 0 && cpu > 0 {
		fmt.Printf("    %-24s %9.0f µs CPU per op (node and clients)\n", r.name, float64(cpu.Microseconds())/float64(n))
	}
}
