// Package cluster is the cluster benchscale measures on: hack/local-cluster.sh's
// local one (etcd, kube-apiserver with its audit log on,
// kube-controller-manager, kube-scheduler, kwok), started and stopped by
// Local, with a user of the controller's own (a client certificate signed
// by the cluster's CA) so the audit log tells its requests from the
// harness's; and the CPU time its processes use (ControlPlane), read from
// the pid files the script writes, by which a phase waits for the
// control plane to be idle before it starts and is charged what the
// control plane spent over it.
//
// On an existing cluster (-kubeconfig) there is no Local and the
// ControlPlane is nil: it knows no CPU time and waits for nothing.
package cluster
