package kubeapi_test

import (
	"fmt"
	"slices"

	"github.com/stencil-dev/stencil/templates/kubeapi"
)

// Namespaces and Nodes are cluster-scoped, Deployments are not; every
// built-in kind is among the API versions an offline render sees.
func ExampleClusterScoped() {
	fmt.Println(kubeapi.ClusterScoped("", "Namespace"), kubeapi.ClusterScoped("", "Node"), kubeapi.ClusterScoped("apps", "Deployment"))
	fmt.Println(slices.Contains(kubeapi.APIVersions(), "apps/v1/Deployment"), slices.IsSorted(kubeapi.APIVersions()))
	// Output:
	// true true false
	// true true
}
