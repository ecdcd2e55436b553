package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// newestLandlock is the newest Landlock ABI that go-landlock knows
// (landlock.V11); a newer kernel is used at this one.
const newestLandlock = 11

// refused are the system calls a confined worker is refused (EPERM),
// whatever their arguments; names this architecture lacks are skipped.
var refused = []string{
	// Files, as Landlock refuses them, and the changes Landlock does not
	// cover (modes, owners, times, extended attributes).
	"open", "openat", "openat2", "creat", "open_by_handle_at", "name_to_handle_at", "uselib",
	"truncate", "chmod", "fchmodat", "fchmodat2", "chown", "lchown", "fchownat",
	"utime", "utimes", "utimensat", "futimesat", "setxattr", "lsetxattr", "removexattr", "lremovexattr",
	"link", "linkat", "symlink", "symlinkat", "unlink", "unlinkat", "rename", "renameat", "renameat2",
	"mkdir", "mkdirat", "rmdir", "mknod", "mknodat",
	// Sockets of every family.
	"socket", "socketpair", "socketcall", "connect", "bind", "listen", "accept", "accept4",
	// Programs and processes (threads are clone with CLONE_THREAD, below).
	"execve", "execveat", "fork", "vfork",
	// Other processes: their memory, their files, their signals.
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_open", "pidfd_getfd", "pidfd_send_signal",
	"tkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "kcmp", "process_madvise", "process_mrelease",
	"migrate_pages", "move_pages",
	// Ways around a system-call filter, and kernel surface a render never needs.
	"io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "userfaultfd", "perf_event_open",
	"keyctl", "add_key", "request_key", "unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	"quotactl", "acct", "swapon", "swapoff", "reboot", "kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module",
}

// confine restricts the worker, all its threads and anything they start:
// Landlock with no allowed path or port, then the system-call filter.
// It applies what the kernel offers and reports it.
func confine() Isolation {
	var iso Isolation
	if testHooks.noLandlock {
		iso.NoLandlock = "turned off by a test"
	} else if iso.Landlock, iso.NoLandlock = restrictLandlock(); iso.Landlock > 0 {
		iso.NoLandlock = ""
	}
	if testHooks.noSeccomp {
		iso.NoSeccomp = "turned off by a test"
	} else if err := filterSyscalls(); err != nil {
		iso.NoSeccomp = err.Error()
	} else {
		iso.Seccomp = true
	}
	return iso
}

// kernelIsolation is what the kernel would let a worker hold, found
// without confining anything: a strict pool refuses to start without it.
func kernelIsolation() Isolation {
	var iso Isolation
	if abi, err := landlockABI(); err != nil {
		iso.NoLandlock = err.Error()
	} else {
		iso.Landlock = min(abi, newestLandlock)
	}
	if _, err := arch.GetInfo(""); err != nil {
		iso.NoSeccomp = err.Error()
	} else if !seccomp.Supported() {
		iso.NoSeccomp = "the kernel offers no seccomp"
	} else {
		iso.Seccomp = true
	}
	return iso
}

// landlockABI is the kernel's Landlock ABI version.
func landlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == unix.ENOSYS:
		return 0, errors.New("the kernel has no Landlock")
	case errno == unix.EOPNOTSUPP:
		return 0, errors.New("the kernel's Landlock is not enabled at boot (lsm=)")
	case errno != 0:
		return 0, fmt.Errorf("read the Landlock ABI version: %w", errno)
	case v < 1:
		return 0, errors.New("the kernel has no Landlock ABI")
	}
	return int(v), nil
}

// restrictLandlock allows no path and no port to every thread of the
// process, at the newest ABI the kernel offers: no file can be opened,
// executed or made, no TCP port bound or connected, and (ABI 6) no signal
// or abstract unix socket reaches a process outside the worker.
func restrictLandlock() (int, string) {
	abi, err := landlockABI()
	if err != nil {
		return 0, err.Error()
	}
	if err := landlock.V11.BestEffort().Restrict(); err != nil {
		return 0, err.Error()
	}
	return min(abi, newestLandlock), ""
}

// filterSyscalls installs the system-call filter on every thread (TSYNC).
func filterSyscalls() error {
	info, err := arch.GetInfo("")
	if err != nil {
		return err
	}
	// no_new_privs, which a filter needs, is set on the calling thread:
	// the filter must be installed from the same one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	filter := seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: syscallPolicy(info, os.Getpid())}
	if err := seccomp.LoadFilter(filter); err != nil {
		return err
	}
	return killForeignArch(info)
}

// syscallPolicy refuses the refused calls, and the arguments of others
// that reach another process or start one.
func syscallPolicy(info *arch.Info, pid int) seccomp.Policy {
	known := func(names ...string) []string {
		var out []string
		for _, n := range names {
			if _, ok := info.SyscallNames[n]; ok {
				out = append(out, n)
			}
		}
		return out
	}
	other := seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: uint64(pid)}}
	var byArgs []seccomp.NameWithConditions
	for _, c := range []seccomp.NameWithConditions{
		// A process, not a thread.
		{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsNotSet, Value: unix.CLONE_THREAD}}},
		// Another process's limits.
		{Name: "prlimit64", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: 0}}},
		// Signals to another process or process group (the runtime
		// signals its own threads with tgkill).
		{Name: "kill", Conditions: other},
		{Name: "tgkill", Conditions: other},
	} {
		if len(known(c.Name)) == 1 {
			byArgs = append(byArgs, c)
		}
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: known(refused...), Action: seccomp.ActionErrno},
			// glibc's pthread_create and Go fall back to clone on ENOSYS.
			{Names: known("clone3"), Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
			// Last: after an argument test fails, the filter compares
			// that argument, not the call's number, with the calls that
			// follow; in this order no such comparison can refuse a call
			// these tests allow.
			{NamesWithCondtions: byArgs, Action: seccomp.ActionErrno},
		},
	}
}

// killForeignArch kills a worker that makes a system call of another
// architecture (i386's int 0x80 on amd64), which the filter above would
// let through.
func killForeignArch(info *arch.Info) error {
	raw, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	})
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return fmt.Errorf("install the architecture filter: %w", errno)
	}
	return nil
}
