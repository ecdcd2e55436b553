package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/publish"
)

// The kinds of CustomResourceDefinitions, a Bundle's published kind
// among them, are not ready for their first instance when their CRD is
// Established, nor when the Bundle says Ready: the API server lists a
// new CRD in discovery some time after it is Established (until then a
// client's RESTMapper maps no such kind, and its create fails with "no
// matches for kind"), and the binding and the parameters of stencil's
// admission policy for a published kind reach the API server's policy
// plugin some time after the Bundle controller wrote them (until then an
// instance is refused "no Bundle publishes", or admitted unchecked). A
// test creates the first instance of such a kind after one of these
// waits.

// probe is obj, renamed AdmissionProbe, to dry-run its create: nothing
// is stored, and no instance of a test is in the way.
func probe(obj client.Object) client.Object {
	p := obj.DeepCopyObject().(client.Object)
	p.SetName(AdmissionProbe)
	p.SetGenerateName("")
	p.SetResourceVersion("")
	p.SetUID("")
	return p
}

// dryCreate dry-runs the create of a copy of obj named AdmissionProbe:
// nil when admitted.
func dryCreate(ctx context.Context, c client.Client, obj client.Object) error {
	err := c.Create(ctx, probe(obj), client.DryRunAll)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// Creatable returns nil once the API server admits a create of obj (a
// server-side dry run of a copy named AdmissionProbe, nothing stored),
// and the last refusal when ctx ends first: c's RESTMapper maps obj's
// kind (discovery lists its CRD), the API server serves it, and every
// admission check passes. Give obj a spec its kind's schema accepts.
func Creatable(ctx context.Context, c client.Client, obj client.Object) error {
	return pollLast(ctx, fmt.Sprintf("the API server does not admit %s %s/%s", kindOf(obj), obj.GetNamespace(), obj.GetName()),
		func(ctx context.Context) error { return dryCreate(ctx, c, obj) })
}

// WaitCreatable fails t unless the API server admits a create of obj
// within timeout (Timeout when 0), as Creatable: call it before the
// first create of an instance of a CRD's kind the test has just made
// (or seen Established), which stencil's admission policy does not bind.
func WaitCreatable(t testing.TB, c client.Client, obj client.Object, timeout time.Duration) {
	t.Helper()
	ctx, cancel := withTimeout(timeout)
	defer cancel()
	if err := Creatable(ctx, c, obj); err != nil {
		t.Fatalf("after %s: %v", orDefault(timeout), err)
	}
}

// KindChecked returns nil once, as Creatable, the API server admits a
// create of obj, an instance of a kind a Bundle publishes, and stencil's
// admission policy checks its kind: a dry-run create of obj with an
// invalid stencil.dev/suspend annotation is refused by the policy
// (Invalid, naming the annotation). That refusal comes only once the
// kind's binding applies and the parameters name the kind's Bundle
// (else the policy refuses "no Bundle publishes" first, or does not
// look at all).
func KindChecked(ctx context.Context, c client.Client, obj client.Object) error {
	bad := probe(obj)
	annotations := map[string]string{}
	for k, v := range bad.GetAnnotations() {
		annotations[k] = v
	}
	annotations[publish.AnnotationSuspend] = "not-a-bool"
	bad.SetAnnotations(annotations)
	return pollLast(ctx, fmt.Sprintf("stencil's admission policy does not check %s %s/%s yet", kindOf(obj), obj.GetNamespace(), obj.GetName()),
		func(ctx context.Context) error {
			err := c.Create(ctx, bad.DeepCopyObject().(client.Object), client.DryRunAll)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), publish.AnnotationSuspend) {
				return fmt.Errorf("a dry-run create with an invalid %s annotation: %v, want it refused by stencil's admission policy", publish.AnnotationSuspend, err)
			}
			return dryCreate(ctx, c, obj)
		})
}

// WaitKindChecked fails t unless, within timeout (Timeout when 0), the
// API server admits a create of obj and stencil's admission policy
// checks its kind (KindChecked): call it once a Bundle is Ready, before
// the first create of an instance of the kind it publishes, and before a
// test counts on the policy refusing one.
func WaitKindChecked(t testing.TB, c client.Client, obj client.Object, timeout time.Duration) {
	t.Helper()
	ctx, cancel := withTimeout(timeout)
	defer cancel()
	if err := KindChecked(ctx, c, obj); err != nil {
		t.Fatalf("after %s: %v", orDefault(timeout), err)
	}
}
