package pull_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/pull"
	"github.com/stencil-dev/stencil/source"
	"github.com/stencil-dev/stencil/source/sourcetest"
)

// TestPullerPolicy: the controller's puller reaches a registry on a
// loopback (or private) address only with the cluster admin's allowance
// (engine.Options.SourcePolicy, --allow-private-registries): a Bundle
// has no say.
func TestPullerPolicy(t *testing.T) {
	reg := sourcetest.NewRegistry(t, "", "")
	reg.Push(t, "charts/app", "1.0.0", sourcetest.Chart(t, "app", "1.0.0", map[string]string{"values.yaml": "a: 1\n"}))
	// The Bundle names no Secret: the puller reads none, and trusts the
	// registry's certificate through the system's roots only, which the
	// refusal comes before.
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: v1alpha1.BundleSpec{Source: &v1alpha1.BundleSource{OCI: reg.Ref("charts/app", "1.0.0")}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	pushed := reg.Requests()
	_, err := (&pull.Puller{Namespace: "stencil-system"}).Resolve(ctx, b)
	if got := source.Reason(err); got != source.ReasonURLRefused {
		t.Fatalf("the default policy: %v (%s); want URLRefused", err, got)
	}
	if n := reg.Requests() - pushed; n != 0 {
		t.Errorf("the registry heard %d requests; want none", n)
	}
	// With the allowance, the connection is made: the TLS handshake then
	// fails on the test's certificate, which no Secret trusts here.
	_, err = (&pull.Puller{Namespace: "stencil-system", Policy: testenv.LoopbackRegistries()}).Resolve(ctx, b)
	if err == nil || !strings.Contains(err.Error(), "not trusted") {
		t.Errorf("with the admin's allowance: %v; want the registry reached (and its certificate not trusted)", err)
	}
}
