//go:build !linux

package sandbox

// notLinux is why a worker elsewhere holds what its user holds.
const notLinux = "Landlock and seccomp exist on Linux only"

func confine() Isolation { return kernelIsolation() }

func kernelIsolation() Isolation {
	return Isolation{NoLandlock: notLinux, NoSeccomp: notLinux}
}
