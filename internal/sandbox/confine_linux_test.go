package sandbox

import (
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
)

// TestSyscallPolicyAssembles: every refused name is a system call of some
// architecture (a misspelt one would be skipped silently), and the policy
// assembles for this machine's architecture (the library assembles for
// the running one only).
func TestSyscallPolicyAssembles(t *testing.T) {
	tables := []*arch.Info{arch.X86_64, arch.AARCH64, arch.I386, arch.ARM}
	for _, name := range append(refused, "clone3", "clone", "prlimit64", "kill", "tgkill") {
		found := false
		for _, a := range tables {
			_, ok := a.SyscallNames[name]
			found = found || ok
		}
		if !found {
			t.Errorf("%q is no system call of %d architectures", name, len(tables))
		}
	}
	host, err := arch.GetInfo("")
	if err != nil {
		t.Skip(err)
	}
	p := syscallPolicy(host, 42)
	if _, err := p.Assemble(); err != nil {
		t.Errorf("%s: %v", host.Name, err)
	}
}
