// Package e2e holds the end-to-end test: the local cluster of `make run`
// (hack/local-cluster.sh: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok, where Deployments really roll out), every example
// Bundle and Composition, and stencil's controller.
package e2e
