package procfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Memory returns VmHWM and VmRSS of pid, in KiB.
func Memory(pid int) (peak, current int, err error) {
	st, err := status(pid)
	return st["VmHWM"], st["VmRSS"], err
}

// status returns the sizes /proc/PID/status gives in kB, by name.
func status(pid int) (map[string]int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	return parseStatus(string(b)), nil
}

// parseStatus reads the "Name:  123 kB" lines of /proc/PID/status.
func parseStatus(text string) map[string]int {
	out := map[string]int{}
	for line := range strings.Lines(text) {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(val)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		if n, err := strconv.Atoi(fields[0]); err == nil {
			out[key] = n
		}
	}
	return out
}

// Pss returns the proportional set size of pid in KiB (shared pages
// divided among the processes sharing them), 0 when the kernel does not
// say.
func Pss(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
			if fields := strings.Fields(rest); len(fields) > 0 {
				n, _ := strconv.Atoi(fields[0])
				return n
			}
		}
	}
	return 0
}

// RSSSplit keeps the sample of a process's RssAnon and RssFile (+
// RssShmem) whose sum was the largest: VmHWM says how high the resident
// set went, not of what; sampled every 50 ms, the largest sum is within a
// sample of VmHWM and says which kind of page made it. Its zero value is
// ready to use.
type RSSSplit struct {
	mu         sync.Mutex
	anon, file int
}

// Sample reads /proc/PID/status every 50 ms until done is closed.
func (s *RSSSplit) Sample(pid int, done <-chan struct{}) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		st, err := status(pid)
		if err != nil {
			continue
		}
		s.Record(st["RssAnon"], st["RssFile"]+st["RssShmem"])
	}
}

// Record keeps a sample if its sum is the largest yet.
func (s *RSSSplit) Record(anon, file int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if anon+file > s.anon+s.file {
		s.anon, s.file = anon, file
	}
}

// Peak returns the anonymous and file-backed KiB of the largest sample.
func (s *RSSSplit) Peak() (anon, file int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.anon, s.file
}
