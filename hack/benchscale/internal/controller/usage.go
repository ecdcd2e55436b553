package controller

import (
	"time"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/procfs"
)

// Memory is what the kernel reports of the controller's resident memory
// and its render workers', in KiB.
type Memory struct {
	// Peak is VmHWM, Current VmRSS.
	Peak, Current int
	// WorkersPeak sums the VmHWM of the controller's child processes
	// (the render sandbox's workers); Workers counts them.
	WorkersPeak, Workers int
	// Pss is the proportional set size of the controller and its workers
	// now: shared pages divided among the processes sharing them.
	Pss int
	// PeakAnon and PeakFile split the controller's largest sampled
	// resident set (procfs.RSSSplit) into anonymous pages (the Go heap,
	// stacks, the runtime's own) and file-backed pages (the binary's text
	// and data, mapped files).
	PeakAnon, PeakFile int
}

// Memory reads /proc for the controller and its child processes.
func (p *Process) Memory() (Memory, error) {
	pid := p.PID()
	var m Memory
	var err error
	if m.Peak, m.Current, err = procfs.Memory(pid); err != nil {
		return m, err
	}
	m.Pss = procfs.Pss(pid)
	if p.split != nil {
		m.PeakAnon, m.PeakFile = p.split.Peak()
	}
	for _, child := range procfs.Children(pid) {
		if peak, _, err := procfs.Memory(child); err == nil {
			m.WorkersPeak += peak
			m.Workers++
			m.Pss += procfs.Pss(child)
		}
	}
	return m, nil
}

// CPU returns the CPU time (user and system) the controller and, summed,
// its render workers have used so far.
func (p *Process) CPU() (controller, workers time.Duration) {
	pid := p.PID()
	controller, _ = procfs.CPU(pid)
	for _, child := range procfs.Children(pid) {
		if d, err := procfs.CPU(child); err == nil {
			workers += d
		}
	}
	return controller, workers
}
