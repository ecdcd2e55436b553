// Package sandbox runs template renders in worker processes, so that no
// bundle and no tenant's values can hang, exhaust or crash the process that
// asked for the render (the controller, `stencil render`, `diff`, `lint`).
//
// # Why processes
//
// text/template cannot be cancelled from outside: a goroutine with a timer
// stops waiting for a render, but it does not free the CPU or the memory the
// render holds, and a stack overflow or an out-of-memory in a template
// function is a fatal error of the whole Go process, not a panic that can
// be recovered. Package templates checks budgets at every range iteration
// and template call (steps, range iterations, template calls, output
// bytes, objects) and gives precise errors for the common cases; this package is the bound that holds by
// construction for everything else: a worker process can always be killed,
// and when it dies, the kernel takes back all it held.
//
// # Responsibilities
//
//   - Pool: a bounded pool of worker processes (the running executable
//     re-executed with STENCIL_RENDER_WORKER=1, see Main). Render sends one
//     request (the bundle, once per worker and revision, and the render
//     input, its Observed values included, read by the worker with
//     integers kept int64) and reads back the objects, with what the
//     render read and held back (into in.Observations) and its notes
//     (into in.Notes), or a
//     *templates.RenderError.
//   - Fairness: renders wait for a worker in turns by tenant (queue.go):
//     in order of arrival within a tenant, round-robin across tenants
//     with waiting renders, so a tenant that starts waiting waits for at
//     most one render of each other waiting tenant, plus those running.
//     Render's tenant is in.Composition.Namespace (one shared key without
//     one, as in the CLI); RenderFor names it. Options.MaxWaiting bounds
//     the waiting renders: past it Render fails at once with ErrBusy. A
//     waiting render leaves when its context ends; the queue holds one
//     element per waiting render and nothing after.
//   - Callers that give up: a caller's context that ends mid-render
//     returns at once, but the worker is not killed: it finishes within
//     Limits.Timeout, its answer dropped, and stays warm (a worker stopped
//     mid-render would have to be killed, or its answer would be read as
//     the next render's). Its slot stays taken until then.
//   - Separate pools: a caller that must not wait on others' renders, or
//     spend their workers (the admission webhook's dry runs), gets a Pool
//     of its own, with a small Workers and a MaxWaiting, and the same
//     Limits as the reconcile pool (a shorter Timeout would turn a render
//     the controller accepts into an overrun); its renders then never
//     take, delay or kill a worker of the reconcile pool, by construction.
//   - Deadline: a render that has not answered by Limits.Timeout (plus a
//     short grace for the worker to report where it was) is killed; the
//     result is a RenderError with Reason templates.ReasonTimeout naming the
//     template and line being executed (budget.Progress).
//   - Memory: the worker limits its own data segment (RLIMIT_DATA) to
//     Limits.Memory plus a fixed headroom for the Go runtime, sets the Go
//     memory limit, and a watchdog stops the render with the template's name
//     as soon as the heap passes Limits.Memory. A worker that dies anyway
//     (out of memory, stack overflow) gives Reason templates.ReasonTooLarge.
//     Workers set their oom_score_adj to 1000, so a container's memory
//     limit reached first kills a worker, not the controller.
//   - Isolation: workers run with GOMAXPROCS=1 (a hostile render holds at
//     most one core), an environment of four variables only (EnvWorker,
//     EnvMemory, GOMAXPROCS=1, GOTRACEBACK=none), "/" as working directory,
//     and die with their parent (Pdeathsig). A killed or crashed worker is
//     replaced by a fresh one on the next render.
//   - Confinement: once started, before its first request, a worker holds
//     nothing: Landlock at the newest ABI the kernel offers, no path and no
//     port allowed (no file opened, made or executed, no TCP bind or
//     connect; from ABI 6 no signal or abstract unix socket leaves the
//     worker), and a seccomp filter refusing (EPERM) file opens and
//     changes, sockets, exec, fork and clone without CLONE_THREAD, ptrace,
//     other processes' memory, files, limits and signals, io_uring, bpf,
//     namespaces and mounts (the list is confine_linux.go's); a system call
//     of another architecture kills it. Both hold on every thread (seccomp
//     TSYNC; go-landlock on each thread, or TSYNC from ABI 8). The worker's
//     first message says what holds (Isolation).
//   - Modes: in a strict pool (Limits.Isolation's zero value, the
//     controller's), New on a kernel without Landlock or seccomp, and
//     Render with a worker that could not confine itself, fail with an
//     *IsolationError naming what is missing and the flag
//     --render-isolation; a best-effort pool (render, diff and lint) renders
//     and says once on stderr what is missing. Pool.Isolation reports what
//     holds.
//
// # Speed
//
// A warm worker keeps each parsed bundle, so a render costs the template
// execution plus one request and one response over a pipe. Figures are in
// docs/performance.md.
//
// With two workers and tenant A's 50 slow renders (~0.2 s each) waiting,
// tenant B's render waits for the ones running: BenchmarkFairness shows
// 1.5 of A's renders done before B's, B in ~0.55 s; with one key for all
// (first come, first served, as before), 49 and ~8.9 s.
//
// # Invariants
//
//   - A worker reads no request before it has confined itself and said
//     how; everything a render needs is in the binary (templates knows
//     UTC only, so no zoneinfo file is read).
//   - Render never blocks longer than Limits.Timeout plus the grace, plus
//     the wait for a free worker, and never past the caller's context; a
//     worker's render never runs past Limits.Timeout plus the grace.
//   - At most Options.Workers worker processes run; each waiting render
//     is its caller's goroutine. A render whose caller's context ends is
//     abandoned and its worker killed at once: nobody holds a worker for
//     a result nobody will read.
//   - Messages never carry the values or the worker's stderr beyond the
//     runtime's own "fatal error:" line, which holds no data.
//   - A render in a worker gives the same objects as templates.Render in
//     process; the worker is the same binary.
package sandbox
