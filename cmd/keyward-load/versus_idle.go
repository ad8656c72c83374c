package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/server"
)

// versusIdle is -vs-centrifugo with -idle-sockets N: N idle client sockets opened on
// this node (the idle run, whose full report comes first), then N on a Centrifugo server
// started for the run, each by the same child process (-idle-client, 16 at a time, from
// the same source addresses, pinned like the broadcast runs' readers), and the two side
// by side: how long the sockets took to open, each server's CPU per connect meanwhile,
// and each server's RSS growth per socket after a GC with its freed pages left to the
// runtime (the one measure both servers allow: Centrifugo's GC runs through its pprof
// endpoint; Keyward's report above also gives its RSS with the pages returned).
func versusIdle(ctx context.Context, node *server.Server, c *client, owner apps.Owner, opts idleOptions, conc int) error {
	kw, err := idleSockets(ctx, node, c, owner, opts, conc, func() {})
	if err != nil {
		return fmt.Errorf("keyward: %w", err)
	}
	cf, err := startCentrifugo(ctx, versusCentrifugo)
	if err != nil {
		return err
	}
	defer cf.stop()
	cfFig, err := cf.idle(ctx, opts, conc)
	if err != nil {
		return fmt.Errorf("centrifugo: %w", err)
	}
	n := float64(opts.n)
	line := func(name string, f idleFigures) {
		fmt.Printf("  %-11s opened in %.2f s (%.0f/s), %.3f ms server CPU per connect, RSS after GC %.2f KiB per socket\n", name,
			f.opened.Seconds(), n/f.opened.Seconds(), f.connectCPU.Seconds()*1000/n, float64(f.rssAfterGC)/n/1024)
	}
	fmt.Printf("idle sockets side by side with %s (%s): %d each\n", versusCentrifugo, cf.version, opts.n)
	line("keyward", kw)
	line("centrifugo", cfFig)
	fmt.Printf("  keyward / centrifugo: opening time %.2f, CPU per connect %.2f, RSS per socket %.2f\n",
		kw.opened.Seconds()/cfFig.opened.Seconds(), kw.connectCPU.Seconds()/cfFig.connectCPU.Seconds(),
		float64(kw.rssAfterGC)/float64(cfFig.rssAfterGC))
	return nil
}

// idle opens opts.n idle sockets on Centrifugo from an -idle-client child, holds them
// for -idle-settle and answers the figures.
func (cf *centrifugo) idle(ctx context.Context, opts idleOptions, conc int) (idleFigures, error) {
	var fig idleFigures
	list, err := os.CreateTemp("", "keyward-idle-cf-")
	if err != nil {
		return fig, err
	}
	defer os.Remove(list.Name())
	for i := range opts.n {
		fmt.Fprintf(list, "%s -\n", cf.token(fmt.Sprintf("idle-%d", i)))
	}
	if err := list.Close(); err != nil {
		return fig, err
	}
	if err := cf.gc(); err != nil {
		return fig, err
	}
	before := pidRSS(cf.cmd.Process.Pid)
	self, err := os.Executable()
	if err != nil {
		return fig, err
	}
	name, args := pinned(pins.readers, self, "-idle-client", list.Name(), "-idle-addr", cf.addr, "-concurrency", strconv.Itoa(min(conc, 16)),
		"-idle-sources", strconv.Itoa(opts.sources), "-fanout-proto", "centrifugo")
	child := exec.CommandContext(ctx, name, args...)
	child.Stderr = os.Stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		return fig, err
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		return fig, err
	}
	start, cpu0 := time.Now(), cf.cpu()
	if err := child.Start(); err != nil {
		return fig, err
	}
	defer func() { _ = stdin.Close(); _ = child.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		return fig, fmt.Errorf("idle client: %q, %v", line, err)
	}
	// Centrifugo has each socket connected (its connect reply read) when the child says
	// ready: no count to wait for, unlike Keyward's admission.
	fig.opened, fig.connectCPU = time.Since(start), cf.cpu()-cpu0
	time.Sleep(idleSettle)
	if err := cf.gc(); err != nil {
		return fig, err
	}
	fig.rssAfterGC = pidRSS(cf.cmd.Process.Pid) - before
	return fig, nil
}

// gc runs a garbage collection in Centrifugo (its pprof heap endpoint with gc=1).
func (cf *centrifugo) gc() error {
	resp, err := cf.http.Get("http://" + cf.addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		return fmt.Errorf("centrifugo gc: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("centrifugo gc: %s", resp.Status)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return nil
}

// pidRSS is process pid's resident memory (/proc/PID/statm), 0 when unknown.
func pidRSS(pid int) uint64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
