// Command pause is the first process of a pod sandbox on the install
// test's node (hack/node.sh): it holds the pod's namespaces and does
// nothing until it is told to stop, as Kubernetes' pause image does.
// registry.k8s.io cannot be reached from the machines the tests run on,
// so hack/image builds this into the node's sandbox image instead.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}
