package sandbox

import (
	"fmt"
	"strings"
)

// IsolationMode says what a pool does with a worker that cannot confine
// itself fully (a kernel without Landlock or seccomp).
type IsolationMode int

const (
	// IsolationStrict refuses such a worker: New fails when the kernel
	// lacks a protection, and Render fails with an *IsolationError.
	IsolationStrict IsolationMode = iota
	// IsolationBestEffort renders anyway, with what the kernel offers,
	// and says once on stderr what is missing.
	IsolationBestEffort
)

// IsolationFlag is the command-line flag that chooses the IsolationMode;
// the messages of this package name it.
const IsolationFlag = "--render-isolation"

// ParseIsolationMode parses "strict" or "best-effort".
func ParseIsolationMode(s string) (IsolationMode, error) {
	switch s {
	case "strict":
		return IsolationStrict, nil
	case "best-effort":
		return IsolationBestEffort, nil
	}
	return 0, fmt.Errorf("%s %q: want strict or best-effort", IsolationFlag, s)
}

func (m IsolationMode) String() string {
	if m == IsolationBestEffort {
		return "best-effort"
	}
	return "strict"
}

// Isolation is what confines a worker once it has started: it reports it
// to the pool before it reads its first request.
type Isolation struct {
	// Landlock is the Landlock ABI version the worker restricted itself
	// with, allowing no path and no port; 0 means none.
	Landlock int `json:"landlock,omitempty"`
	// NoLandlock says why Landlock is not in force.
	NoLandlock string `json:"noLandlock,omitempty"`
	// Seccomp says whether the worker's system-call filter is in force.
	Seccomp bool `json:"seccomp,omitempty"`
	// NoSeccomp says why the filter is not in force.
	NoSeccomp string `json:"noSeccomp,omitempty"`
}

// Missing lists the protections not in force, with the reason for each;
// empty means the worker holds nothing.
func (i Isolation) Missing() []string {
	var m []string
	if i.Landlock == 0 {
		m = append(m, "Landlock ("+orUnknown(i.NoLandlock)+")")
	}
	if !i.Seccomp {
		m = append(m, "seccomp ("+orUnknown(i.NoSeccomp)+")")
	}
	return m
}

func (i Isolation) String() string {
	if m := i.Missing(); len(m) > 0 {
		return "without " + strings.Join(m, ", ")
	}
	return fmt.Sprintf("Landlock ABI %d, seccomp", i.Landlock)
}

func orUnknown(s string) string {
	if s == "" {
		return "not reported"
	}
	return s
}

// IsolationError is the error of a strict pool whose workers cannot
// confine themselves.
type IsolationError struct {
	Missing []string
}

func (e *IsolationError) Error() string {
	return fmt.Sprintf("render workers cannot confine themselves: no %s; to render with weaker isolation, start with %s=best-effort",
		strings.Join(e.Missing, ", no "), IsolationFlag)
}

// checkIsolation is the pool's verdict on what a worker (or the kernel)
// offers.
func checkIsolation(mode IsolationMode, iso Isolation) error {
	if m := iso.Missing(); len(m) > 0 && mode == IsolationStrict {
		return &IsolationError{Missing: m}
	}
	return nil
}
