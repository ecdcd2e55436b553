package e2e_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// admitting waits until the API server admits a Composition of namespace
// default (a dry run): the webhook's access entry fails closed, so no
// Composition or instance can be written until the controller serves it,
// its CA is injected and the configuration points at it.
func admitting(t *testing.T, k client.Client, timeout time.Duration) {
	t.Helper()
	probe := &v1alpha1.Composition{}
	probe.Namespace, probe.Name, probe.Spec.Bundle = "default", "admission-probe", "webapp"
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		last = k.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("the API server does not admit Compositions after %s: %v", timeout, last)
	}
}

// admittingFiles waits until kubectl's server dry run of the objects of
// dir passes admission: the access entry the controller adds for a
// published kind fails closed until it is pointed at the controller too.
func admittingFiles(t *testing.T, kc kubectl, dir string, timeout time.Duration) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(context.Context) (bool, error) {
		_, errOut, err := kc.run("", "apply", "--dry-run=server", "-f", dir)
		last = errOut
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server -f %s is not admitted after %s: %s", dir, timeout, last)
	}
}
