package published_test

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/authority"
)

// TestPublishedKindBindingByName (issue 37): the controller may change or
// delete no admission policy or binding but stencil's own, by name: the
// policy and the Compositions' binding through config/rbac, a published
// kind's binding through the kind's own ClusterRole (`stencil bundle
// rbac`). A kind granted without it (a ClusterRole made before issue 37)
// is not published, Forbidden, naming the binding and what to apply;
// granted, it is, its binding owned by its CRD.
func TestPublishedKindBindingByName(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client)
	group := "byname-" + ns + ".example.com"
	gr := schema.GroupResource{Group: group, Resource: "gadgets"}
	controller := testenv.ServiceAccountSubject(testenv.ControllerNamespace, "stencil")

	t.Run("the controller writes only stencil's own admission objects", func(t *testing.T) {
		for _, tc := range []struct {
			resource, name string
			want           bool
		}{
			{"validatingadmissionpolicies", authority.PolicyName, true},
			{"validatingadmissionpolicybindings", authority.CompositionBindingName, true},
			{"validatingadmissionpolicies", "someone-elses-policy", false},
			{"validatingadmissionpolicybindings", "someone-elses-binding", false},
			{"validatingadmissionpolicybindings", authority.KindBindingName(gr), false}, // not granted yet
		} {
			for _, verb := range []string{"update", "patch", "delete"} {
				review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
					User: controller.User, Groups: controller.Groups,
					ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: "admissionregistration.k8s.io", Resource: tc.resource, Name: tc.name},
				}}
				if err := env.Create(ctx, review); err != nil {
					t.Fatal(err)
				}
				want := tc.want && verb != "delete" // stencil deletes neither the policy nor the Compositions' binding
				if review.Status.Allowed != want {
					t.Errorf("the controller may %s %s %s: %v, want %v", verb, tc.resource, tc.name, review.Status.Allowed, want)
				}
			}
		}
	})

	// As a ClusterRole for the kind read before issue 37: the instances,
	// not the binding.
	env.GrantController(t, "stencil-published-old-"+gr.String(), suite.KindRules(group, "gadgets", false)...)
	b := env.Bundle(t, "byname-"+ns, suite.GadgetFiles(""), suite.Publishing(group))
	c := env.BundleReady(t, b.Name, metav1.ConditionFalse, v1alpha1.ReasonForbidden)
	for _, want := range []string{"ValidatingAdmissionPolicyBinding " + publish.AccessBindingName(gr), "stencil bundle rbac"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Ready %s %q does not say %q", c.Reason, c.Message, want)
		}
	}

	// The ClusterRole `stencil bundle rbac` prints (another group, not to
	// wait for the Forbidden one's recheck): published, the binding owned
	// by the CRD (so it goes with it), the instances checked.
	_, granted, _, _ := env.ServeGadgets(t, "byname-granted")
	grantedGR := schema.GroupResource{Group: granted, Resource: "gadgets"}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := env.Get(ctx, client.ObjectKey{Name: authority.KindBindingName(grantedGR)}, binding); err != nil {
		t.Fatal(err)
	}
	if len(binding.OwnerReferences) != 1 || binding.OwnerReferences[0].Name != grantedGR.String() {
		t.Errorf("binding %s owners %v, want the CRD %s", binding.Name, binding.OwnerReferences, grantedGR)
	}
}
