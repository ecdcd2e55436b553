// Command stress is `make test-stress`: it runs the test suites that talk
// to a real API server (envtest and the end-to-end suite) several times,
// each run in a new shuffled order (go test -shuffle=on, a new seed every
// run), while a CPU hog keeps every core of the machine busy beside them,
// and reports every failure with the package, the test, the run and the
// shuffle seed that reproduces its order. It also prints where each run's
// time went, per package.
//
// A test that passes only on a quiet machine, or only in one order, is a
// test that fails in CI: this is where such a test is found before it
// lands. It is not part of `make test`: CI runs the README's command once.
//
//	go run ./hack/stress -runs 5 -count 1 ./reconcile/... ./internal/e2e/
//
// It needs KUBEBUILDER_ASSETS as `make test` sets it; the Makefile's
// test-stress target does that.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	runs := flag.Int("runs", 5, "how many times to run the suites, each in a new shuffled order")
	count := flag.Int("count", 1, "go test -count within each run (each test run that many times in a row)")
	hogs := flag.Int("hogs", runtime.NumCPU(), "CPU-bound processes to run beside the tests (0: none)")
	timeout := flag.Duration("timeout", 60*time.Minute, "go test -timeout of each run")
	logs := flag.String("logs", filepath.Join(os.TempDir(), "stencil-stress"), "folder for each run's full go test -json output")
	run := flag.String("run", "", "go test -run of each run (all tests when empty)")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		fmt.Fprintln(os.Stderr, "stress: name the packages to run")
		os.Exit(2)
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "stress: KUBEBUILDER_ASSETS is not set: run it with make test-stress")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(*logs, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "stress:", err)
		os.Exit(1)
	}
	hog, err := startHog(ctx, *hogs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stress: start the CPU hog:", err)
		os.Exit(1)
	}
	defer hog.stop()
	fmt.Printf("stress: %d runs of %s (-count %d, -shuffle on), beside %d CPU hogs on %d CPUs; logs in %s\n",
		*runs, strings.Join(pkgs, " "), *count, *hogs, runtime.NumCPU(), *logs)

	start := time.Now()
	var all []result
	for i := 1; i <= *runs && ctx.Err() == nil; i++ {
		args := []string{"test", "-json", "-shuffle=on", fmt.Sprintf("-count=%d", *count), "-timeout", timeout.String()}
		if *run != "" {
			args = append(args, "-run", *run)
		}
		args = append(args, pkgs...)
		r, err := runOnce(ctx, i, args, filepath.Join(*logs, fmt.Sprintf("run-%d.json", i)))
		if err != nil {
			fmt.Fprintf(os.Stderr, "stress: run %d: %v\n", i, err)
			os.Exit(1)
		}
		var b strings.Builder
		r.print(&b)
		report(b.String())
		all = append(all, r)
	}
	var b strings.Builder
	failed := summarize(&b, all, time.Since(start))
	report(b.String())
	if failed {
		os.Exit(1)
	}
}

// report writes s to standard output; a report that cannot be written
// (a closed pipe, a full disk) fails the command rather than pass unseen.
func report(s string) {
	if _, err := os.Stdout.WriteString(s); err != nil {
		fmt.Fprintln(os.Stderr, "stress: write the report:", err)
		os.Exit(1)
	}
}

// hog is a set of processes that each spin on one CPU.
type hog struct {
	cmds []*exec.Cmd
}

// startHog starts n processes that each keep one CPU busy: this very
// program run as a hog (STRESS_HOG=1), at the tests' own priority, so
// that the tests get about half of every core.
func startHog(ctx context.Context, n int) (*hog, error) {
	h := &hog{}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	for range n {
		cmd := exec.CommandContext(ctx, self)
		cmd.Env = append(os.Environ(), "STRESS_HOG=1")
		if err := cmd.Start(); err != nil {
			h.stop()
			return nil, err
		}
		h.cmds = append(h.cmds, cmd)
	}
	return h, nil
}

func (h *hog) stop() {
	for _, c := range h.cmds {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
}

// init makes a process started with STRESS_HOG=1 spin until killed.
func init() {
	if os.Getenv("STRESS_HOG") != "1" {
		return
	}
	runtime.GOMAXPROCS(1)
	var x atomic.Uint64
	for {
		x.Add(1)
	}
}

// event is one line of go test -json (test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// result is what one run found.
type result struct {
	run      int
	log      string
	elapsed  time.Duration
	seeds    map[string]string  // package → shuffle seed
	packages map[string]float64 // package → seconds, as go test reports them
	outcome  map[string]string  // package → pass, fail or skip
	tests    map[string]float64 // "package Test" → seconds, top-level tests only
	failures []failure
}

// failure is a test that failed in a run, with its last lines of output.
type failure struct {
	pkg, test string
	output    []string
}

var seedLine = regexp.MustCompile(`^-test\.shuffle (\d+)`)

// runOnce runs go test with args once, writing its JSON to logPath, and
// reads the packages' seeds, times and failures from it.
func runOnce(ctx context.Context, i int, args []string, logPath string) (r result, err error) {
	r = result{run: i, log: logPath, seeds: map[string]string{}, packages: map[string]float64{}, outcome: map[string]string{}, tests: map[string]float64{}}
	f, err := os.Create(logPath)
	if err != nil {
		return r, err
	}
	defer func() {
		// The log is what a failure is read from later: losing its end
		// fails the run.
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("write %s: %w", logPath, cerr)
		}
	}()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return r, err
	}
	start := time.Now()
	fmt.Printf("\nrun %d: go %s\n", i, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		return r, err
	}
	outputs := map[string][]string{} // package/test → its output lines, bounded
	sc := bufio.NewScanner(io.TeeReader(out, f))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		r.read(e, outputs)
	}
	waitErr := cmd.Wait()
	r.elapsed = time.Since(start)
	var exit *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exit) {
		return r, waitErr
	}
	if waitErr != nil && len(r.failures) == 0 {
		// A build failure, a timeout or a panic outside a test.
		r.failures = append(r.failures, failure{pkg: "(go test)", test: "exit " + waitErr.Error()})
	}
	return r, nil
}

// read takes one event into r.
func (r *result) read(e event, outputs map[string][]string) {
	key := e.Package + " " + e.Test
	switch e.Action {
	case "output":
		if m := seedLine.FindStringSubmatch(e.Output); m != nil && e.Test == "" {
			r.seeds[e.Package] = m[1]
		}
		lines := append(outputs[key], strings.TrimRight(e.Output, "\n"))
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		outputs[key] = lines
	case "fail":
		if e.Test == "" {
			r.outcome[e.Package] = "fail"
			r.packages[e.Package] = e.Elapsed
			if !slices.ContainsFunc(r.failures, func(f failure) bool { return f.pkg == e.Package }) {
				// The package failed with no test failing: a panic,
				// a timeout, TestMain's setup.
				r.failures = append(r.failures, failure{pkg: e.Package, test: "(package)", output: outputs[key]})
			}
			return
		}
		// A parent test fails with its subtest: keep the innermost only.
		for _, f := range r.failures {
			if f.pkg == e.Package && strings.HasPrefix(f.test, e.Test+"/") {
				return
			}
		}
		r.failures = append(r.failures, failure{pkg: e.Package, test: e.Test, output: outputs[key]})
	case "pass", "skip":
		if e.Test != "" && !strings.Contains(e.Test, "/") {
			r.tests[key] += e.Elapsed
		}
		if e.Test == "" {
			r.outcome[e.Package] = e.Action
			r.packages[e.Package] = e.Elapsed
		}
		delete(outputs, key)
	}
}

// print writes the run's packages (slowest first), seeds and failures.
func (r result) print(w *strings.Builder) {
	fmt.Fprintf(w, "run %d took %s; %d failures; log %s\n", r.run, r.elapsed.Round(time.Second), len(r.failures), r.log)
	var pkgs []string
	for p := range r.packages {
		pkgs = append(pkgs, p)
	}
	sort.Slice(pkgs, func(i, j int) bool { return r.packages[pkgs[i]] > r.packages[pkgs[j]] })
	for _, p := range pkgs {
		if r.packages[p] < 1 && r.outcome[p] == "pass" {
			continue
		}
		fmt.Fprintf(w, "  %-4s %7.1fs  %s  (-shuffle=%s)\n", r.outcome[p], r.packages[p], p, r.seeds[p])
	}
	var tests []string
	for t := range r.tests {
		tests = append(tests, t)
	}
	sort.Slice(tests, func(i, j int) bool { return r.tests[tests[i]] > r.tests[tests[j]] })
	if len(tests) > 15 {
		tests = tests[:15]
	}
	fmt.Fprintln(w, "  slowest tests:")
	for _, t := range tests {
		fmt.Fprintf(w, "       %7.1fs  %s\n", r.tests[t], t)
	}
	for _, f := range r.failures {
		fmt.Fprintf(w, "  FAIL %s %s (run %d, seed %s)\n", f.pkg, f.test, r.run, r.seeds[f.pkg])
		for _, l := range f.output {
			fmt.Fprintf(w, "       | %s\n", l)
		}
	}
}

// summarize prints every failure of every run with how to reproduce it,
// and reports whether there was one.
func summarize(w *strings.Builder, all []result, took time.Duration) bool {
	n := 0
	fmt.Fprintf(w, "\nstress: %d runs in %s\n", len(all), took.Round(time.Second))
	for _, r := range all {
		for _, f := range r.failures {
			n++
			test := f.test
			if i := strings.IndexByte(test, '/'); i > 0 {
				test = test[:i]
			}
			fmt.Fprintf(w, "  run %d: %s %s\n    reproduce the order: go test -count=1 -shuffle=%s %s   (the test alone: -run '^%s$')\n",
				r.run, f.pkg, f.test, r.seeds[f.pkg], f.pkg, test)
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "stress: 0 failures")
		return false
	}
	fmt.Fprintf(w, "stress: %d failures\n", n)
	return true
}
