package reconcile

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LocalDecision is the controller's write-or-skip decision, for the
// differential tests of package reconcile_test: write reports whether
// stencil would send the apply of desired over live, changed the paths
// it found changed, asked whether it had to settle the answer with a
// server-side dry-run (see confirmer).
type LocalDecision func(ctx context.Context, desired, live *unstructured.Unstructured) (write bool, changed []string, asked bool)

// NewLocalDecision returns the decision the controller makes, typing
// custom kinds from the OpenAPI v3 of the cluster cfg connects to and
// sending its dry-runs through writer.
func NewLocalDecision(cfg *rest.Config, writer client.Client) (LocalDecision, error) {
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	s, err := newSchemas(disco.OpenAPIV3())
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, desired, live *unstructured.Unstructured) (bool, []string, bool) {
		d := s.upToDate(ctx, desired, live)
		if d.confirm && s.confirmed.unchanged(ctx, writer, desired, live, d.key) {
			d.write = false
		}
		return d.write, d.changed, d.confirm
	}, nil
}
