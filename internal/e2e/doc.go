// Package e2e holds the end-to-end test: the local cluster of `make run`
// (hack/local-cluster.sh: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok, where Deployments really roll out), every example
// Bundle, stencil's controller (serving its admission webhook on loopback,
// as `make run` does), the example Compositions, and the articles'
// instances of the kinds the Bundles publish, applied, previewed with
// kubectl's server dry run, edited, refused and deleted with kubectl as
// their users would.
package e2e
