package procfs

import (
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseStatus(t *testing.T) {
	status := "Name:\tstencil\nUmask:\t0022\nVmHWM:\t  204000 kB\nVmRSS:\t  190000 kB\nRssAnon:\t  120000 kB\nRssFile:\t   70000 kB\nRssShmem:\t       0 kB\nThreads:\t17\n"
	want := map[string]int{"VmHWM": 204000, "VmRSS": 190000, "RssAnon": 120000, "RssFile": 70000, "RssShmem": 0}
	if diff := cmp.Diff(want, parseStatus(status)); diff != "" {
		t.Errorf("parseStatus (-want +got):\n%s", diff)
	}
}

func TestRSSSplitKeepsLargestSample(t *testing.T) {
	var s RSSSplit
	for _, sample := range [][2]int{{50, 60}, {90, 60}, {80, 65}} {
		s.Record(sample[0], sample[1])
	}
	if anon, file := s.Peak(); anon != 90 || file != 60 {
		t.Errorf("Peak = %d anon, %d file; want the sample of the largest sum, 90 and 60", anon, file)
	}
}

func TestParseStatCPU(t *testing.T) {
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
	stat := "4242 (stencil (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1234 566 0 0 20 0 17 0\n"
	got, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 18 * time.Second; got != want {
		t.Errorf("parseStatCPU = %s, want %s (1234 + 566 ticks of 10 ms)", got, want)
	}
	if _, err := parseStatCPU("4242 stencil S 1"); err == nil {
		t.Error("parseStatCPU of a line without a command name: no error")
	}
}

// TestOwnProcess reads the test's own process, which has a resident set
// and has used some CPU.
func TestOwnProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc:", err)
	}
	peak, current, err := Memory(os.Getpid())
	if err != nil || peak == 0 || current == 0 {
		t.Errorf("Memory = %d, %d, %v", peak, current, err)
	}
	if _, err := CPU(os.Getpid()); err != nil {
		t.Errorf("CPU: %v", err)
	}
}
