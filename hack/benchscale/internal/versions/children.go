package versions

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/requests"
)

// children stamps the instances' children in namespaces (the ConfigMaps
// and Services labelled app, which the templates set) by their
// resourceVersions, keyed "ConfigMap ns/name".
func children(ctx context.Context, c client.Reader, namespaces ...string) (stamps, error) {
	out := stamps{}
	for _, ns := range namespaces {
		cms := &corev1.ConfigMapList{}
		if err := c.List(ctx, cms, client.InNamespace(ns), client.HasLabels{"app"}); err != nil {
			return nil, fmt.Errorf("list the ConfigMaps of %s: %w", ns, err)
		}
		for _, o := range cms.Items {
			out["ConfigMap "+ns+"/"+o.Name] = o.ResourceVersion
		}
		svcs := &corev1.ServiceList{}
		if err := c.List(ctx, svcs, client.InNamespace(ns), client.HasLabels{"app"}); err != nil {
			return nil, fmt.Errorf("list the Services of %s: %w", ns, err)
		}
		for _, o := range svcs.Items {
			out["Service "+ns+"/"+o.Name] = o.ResourceVersion
		}
	}
	return out, nil
}

// wantChildren is how many children n instances render: a ConfigMap each,
// a Service for those with ports (v1Spec: all but every fifth).
func wantChildren(n int) int {
	services := 0
	for i := range n {
		if _, ok := v1Spec(i)["ports"]; ok {
			services++
		}
	}
	return n + services
}

// childResources are the children's resources, as the audit log names
// them.
var childResources = map[string]bool{"configmaps": true, "services": true}

// childWrites counts the writes (any verb but get, list and watch) to
// the children's resources among c.
func childWrites(c requests.Counts) int {
	n := 0
	for key, v := range c {
		var verb, resource string
		if _, err := fmt.Sscan(key, &verb, &resource); err != nil {
			continue
		}
		if verb != "get" && verb != "list" && verb != "watch" && childResources[resource] {
			n += v
		}
	}
	return n
}

// migrationOwn are the requests among c that the storage migration sends:
// the instances' lists and rewrites (lists and updates of the main
// resource: the passes get the instances and write their status), the
// CRD's status (status.storedVersions) and the Bundle's status
// (status.storage, after each page; the Bundle controller's own writes of
// it are among them).
func migrationOwn(c requests.Counts) requests.Counts {
	out := requests.Counts{}
	for key, v := range c {
		var verb, resource string
		if _, err := fmt.Sscan(key, &verb, &resource); err != nil {
			continue
		}
		switch {
		case resource == crdName && (verb == "list" || verb == "update"),
			resource == "customresourcedefinitions.apiextensions.k8s.io/status",
			resource == "bundles.stencil.dev/status" && verb != "get":
			out[key] = v
		}
	}
	return out
}
