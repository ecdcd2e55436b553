package admission_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/admission"
)

// TestAdmissionPreviewsOutputs: a dry run of a Composition whose Bundle
// declares status outputs says which outputs the change would alter,
// computed over the dry run's would-be members; a requester who may not
// get every member's kind is told they are not shown, never their values.
func TestAdmissionPreviewsOutputs(t *testing.T) {
	env.StartAdmission(t, admission.DefaultWebhookConfigName, "admission", map[string]string{suite.AdmissionLabel: "true"}, admission.Options{})
	ctx := context.Background()
	ns := env.AdmissionNamespace(t)
	b := env.Bundle(t, "adm-outputs-"+ns, suite.ShopFiles(), suite.WithShopSchema, func(s *v1alpha1.BundleSpec) {
		s.Outputs = []v1alpha1.BundleOutput{
			{Name: "replicas", Type: "integer", Value: `members["Deployment/shop"].spec.replicas`},
			// No controller writes a Deployment's status in envtest: not
			// computable, so never shown.
			{Name: "available", Type: "integer", Value: `members["Deployment/shop"].status.availableReplicas`},
		}
	})
	env.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	env.Refusing(t, ns, b.Name)
	env.MustCreate(t, suite.Composition(ns, "shop", b.Name, `{"replicas":2,"extra":false}`))
	comp := &v1alpha1.Composition{}
	testenv.Eventually(t, 0, "the controller to compute the outputs", func() (bool, error) {
		if err := env.Get(ctx, suite.Key(ns, "shop"), comp); err != nil {
			return false, err
		}
		return string(comp.Status.Outputs["replicas"].Raw) == "2", nil
	})

	// dryRun sends a dry-run update of the values as c, returning the
	// warnings of the attempt that went through.
	dryRun := func(c client.Client, w *suite.Warnings, values string) []string {
		t.Helper()
		comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}}
		if err := env.Retry(ctx, comp, func() error {
			w.Take()
			if err := c.Get(ctx, suite.Key(ns, "shop"), comp); err != nil {
				return err
			}
			comp.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(values)}
			return c.Update(ctx, comp, client.DryRunAll)
		}); err != nil {
			t.Fatalf("dry-run update: %v", err)
		}
		return w.Take()
	}

	admin, warnings := env.WarningClient(t)
	got := dryRun(admin, warnings, `{"replicas":3,"extra":false}`)
	t.Logf("warnings: %q", got)
	if want := "stencil: status.outputs.replicas: 2 → 3"; !slices.Contains(got, want) {
		t.Errorf("warnings %q lack %q", got, want)
	}
	for _, w := range got {
		if w == outputsWithheldWarning || strings.Contains(w, "available") {
			t.Errorf("warning %q for the cluster admin", w)
		}
	}

	// dave may write Compositions and get Deployments, not Secrets: the
	// outputs could read the Secret, so none is shown.
	env.Grant(t, ns, "dave", "dave", suite.CompositionsRule,
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}})
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "dave", Groups: []string{"system:authenticated"}}
	daveWarnings := &suite.Warnings{}
	cfg.WarningHandler = daveWarnings
	dave, err := client.New(cfg, client.Options{Scheme: env.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	got = dryRun(dave, daveWarnings, `{"replicas":4,"extra":false}`)
	t.Logf("dave's warnings: %q", got)
	if !slices.Contains(got, outputsWithheldWarning) {
		t.Errorf("dave's warnings %q lack %q", got, outputsWithheldWarning)
	}
	for _, w := range got {
		if w == "stencil: status.outputs.replicas: 2 → 4" {
			t.Errorf("dave, who may not get the Secret, sees the output: %q", w)
		}
	}
}

// outputsWithheldWarning is the webhook's line for outputs not shown.
const outputsWithheldWarning = "stencil: status outputs not shown: you may not get every member they read"
