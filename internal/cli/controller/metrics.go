package controller

import (
	"crypto/tls"

	"github.com/stencil-dev/stencil/reconcile/admission/server"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// MetricsServer are the options of the controller's metrics endpoint on
// addr ("0" turns it off). secure (--metrics-secure, the default) serves
// HTTPS with a self-signed certificate and lets a request through only
// with a bearer token the API server authenticates (a TokenReview) for a
// user it authorizes to get the non-resource URL /metrics (a
// SubjectAccessReview; config/rbac's stencil-metrics-reader ClusterRole),
// as kubebuilder scaffolds it; otherwise plain HTTP, for a trusted
// network. HTTP/2 is offered only with enableHTTP2 (CVE-2023-44487).
func MetricsServer(addr string, secure, enableHTTP2 bool) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr, SecureServing: secure}
	if secure {
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
		if !enableHTTP2 {
			o.TLSOpts = []func(*tls.Config){server.DisableHTTP2}
		}
	}
	return o
}
