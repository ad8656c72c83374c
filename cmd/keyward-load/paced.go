package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// -vs-rates: the broadcast rates of the side-by-side runs (0: flat out).
var versusRates string

// parseRates reads -vs-rates: broadcasts per second, comma-separated; 0 is flat out (one
// broadcast after another, each once the last was read by every socket).
func parseRates(list string) ([]float64, error) {
	var rates []float64
	for _, f := range strings.Split(list, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || r < 0 {
			return nil, fmt.Errorf("-vs-rates: %q is not a rate", f)
		}
		rates = append(rates, r)
	}
	return rates, nil
}

// runFanoutAt is runFanout at a fixed rate of broadcasts per second (rate 0: runFanout,
// flat out). Broadcast i is due at start + i/rate and published then (or as soon as the
// one before it returned, if that was later), whether or not the ones before it have
// reached every socket; its time runs from when it was due until the child says every
// socket read it, so a server that falls behind its rate is charged for the wait (no
// coordinated omission). The server's CPU is over the whole window, idle gaps included.
func runFanoutAt(ctx context.Context, addr, proto string, lines []string, d time.Duration, rate float64, publish func(i int) error, serverCPU func() time.Duration) (fanoutResult, error) {
	if rate <= 0 {
		return runFanout(ctx, addr, proto, lines, d, publish, serverCPU)
	}
	ch, res, err := openFanout(ctx, addr, proto, lines, serverCPU)
	if err != nil {
		return fanoutResult{}, err
	}
	defer ch.stop()
	defer startProfile(proto)()
	every := time.Duration(float64(time.Second) / rate)
	total := max(1, int(d/every))
	due := make([]time.Time, total)
	// The reader takes the child's answers as they come, the publisher keeps the pace.
	type answer struct {
		lost int
		at   time.Time
		err  error
	}
	answers := make(chan answer, total)
	go func() {
		for i := range total {
			lost, err := ch.done(i)
			answers <- answer{lost, time.Now(), err}
			if err != nil {
				return
			}
		}
	}()
	cpu0, readers0 := serverCPU(), pidCPU(ch.cmd.Process.Pid)
	start := time.Now()
	for i := range total {
		due[i] = start.Add(time.Duration(i) * every)
		if wait := time.Until(due[i]); wait > 0 {
			time.Sleep(wait)
		}
		if err := publish(i); err != nil {
			return res, err // the child ends with ch.stop, and the reader with it
		}
	}
	for i := range total {
		a := <-answers
		if a.err != nil {
			return res, a.err
		}
		res.last = append(res.last, a.at.Sub(due[i]))
		res.lost += a.lost
		res.broadcasts++
	}
	res.elapsed = time.Since(start)
	res.cpu = serverCPU() - cpu0
	res.readersCPU = pidCPU(ch.cmd.Process.Pid) - readers0
	return res, nil
}
