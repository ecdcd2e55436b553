package admission_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// recorded waits until the status of Composition ns/name, for its
// generation, records an inventory holding every one of kinds (Kind.group,
// Kind for the core group). A dry run lists as would-be-pruned only the
// members of the kinds the status records, and compares each child with
// the live one: it previews a Composition as it stands only once a pass
// has applied its members and written its status, some time after the
// members appear.
func recorded(t *testing.T, ns, name string, kinds ...string) {
	t.Helper()
	testenv.Eventually(t, 0, fmt.Sprintf("Composition %s to record %v", name, kinds), func() (bool, error) {
		c := &v1alpha1.Composition{}
		if err := env.Get(context.Background(), suite.Key(ns, name), c); err != nil {
			return false, err
		}
		st := c.Status
		if st.ObservedGeneration != c.Generation || st.Inventory == nil {
			return false, fmt.Errorf("status of generation %d (the Composition is at %d), inventory %+v", st.ObservedGeneration, c.Generation, st.Inventory)
		}
		for _, kind := range kinds {
			if !slices.Contains(st.Inventory.GroupKinds, kind) {
				return false, fmt.Errorf("inventory %v lacks %s", st.Inventory.GroupKinds, kind)
			}
		}
		return true, nil
	})
}

// TestAdmission: the webhook refuses what would stall before anything is
// stored, admits the rest, says on a dry run what the children would
// become, and never stands in the controller's way.
func TestAdmission(t *testing.T) {
	env.StartAdmission(t, admission.DefaultWebhookConfigName, "admission", map[string]string{suite.AdmissionLabel: "true"}, admission.Options{})
	ctx := context.Background()
	ns := env.AdmissionNamespace(t)
	b := env.Bundle(t, "adm-shop-"+ns, suite.ShopFiles(), suite.WithShopSchema)
	env.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	env.Refusing(t, ns, b.Name)

	t.Run("invalid values are refused with the field path, never the value", func(t *testing.T) {
		err := env.Create(ctx, suite.Composition(ns, "bad-values", b.Name, `{"replicas":3,"mode":"not-a-mode-7f3a"}`))
		msg := suite.Denied(t, err)
		if !strings.Contains(msg, "mode") || strings.Contains(msg, "not-a-mode-7f3a") {
			t.Errorf("refusal %q: want the field path mode, without its value", msg)
		}
		if err := env.Get(ctx, suite.Key(ns, "bad-values"), &v1alpha1.Composition{}); !apierrors.IsNotFound(err) {
			t.Errorf("the refused Composition was stored: get says %v", err)
		}
	})

	t.Run("a template that fails is refused naming its file and line", func(t *testing.T) {
		msg := suite.Denied(t, env.Create(ctx, suite.Composition(ns, "bad-template", b.Name, `{"mode":"bad"}`)))
		if !strings.Contains(msg, "templates/cm.yaml:6") {
			t.Errorf("refusal %q: want templates/cm.yaml:6", msg)
		}
		if err := env.Get(ctx, suite.Key(ns, "bad-template-extra"), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("a child of the refused Composition exists: get says %v", err)
		}
	})

	shop := suite.Composition(ns, "shop", b.Name, `{"replicas":2,"password":"first-secret"}`)
	t.Run("a valid Composition is admitted", func(t *testing.T) {
		c, warnings := env.WarningClient(t)
		if err := c.Create(ctx, shop); err != nil {
			t.Fatalf("create: %v", err)
		}
		if w := warnings.Take(); len(w) > 0 {
			t.Errorf("warnings %q; want none", w)
		}
		env.Exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-extra"}})
		env.Exists(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}})
		env.Exists(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}})
	})

	t.Run("a dry run says what the children would become", func(t *testing.T) {
		// What the preview compares with: every member applied, and the
		// kinds recorded (the ConfigMap to prune is found by its kind).
		recorded(t, ns, "shop", "ConfigMap", "Deployment.apps", "Secret")
		c, warnings := env.WarningClient(t)
		// The controller writes the Composition while the test runs: each
		// dry run reads it afresh and is sent again on a conflict, keeping
		// only the warnings of the attempt that went through.
		comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}}
		dryRunUpdate := func(values string) {
			t.Helper()
			err := env.Retry(ctx, comp, func() error {
				warnings.Take()
				comp.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(values)}
				return c.Update(ctx, comp, client.DryRunAll)
			})
			if err != nil {
				t.Fatalf("dry-run update: %v", err)
			}
		}
		dryRunUpdate(`{"replicas":3,"password":"second-secret","extra":false}`)
		got := warnings.Take()
		t.Logf("warnings: %q", got)
		for _, want := range []string{
			"stencil: Deployment/shop: spec.replicas 2 → 3",
			"stencil: Secret/shop: data.password changed",
			"stencil: ConfigMap/shop-extra: would be pruned",
		} {
			if !slices.Contains(got, want) {
				t.Errorf("warnings %q lack %q", got, want)
			}
		}
		for _, w := range got {
			for _, v := range []string{"first-secret", "second-secret", "Zmlyc3Qtc2VjcmV0", "c2Vjb25kLXNlY3JldA"} { // and base64
				if strings.Contains(w, v) {
					t.Errorf("warning %q shows a Secret's value", w)
				}
			}
		}
		dep := &appsv1.Deployment{}
		if err := env.Get(ctx, suite.Key(ns, "shop"), dep); err != nil || *dep.Spec.Replicas != 2 {
			t.Errorf("the dry run changed the Deployment: replicas %v, err %v", dep.Spec.Replicas, err)
		}
		if err := env.Get(ctx, suite.Key(ns, "shop-extra"), &corev1.ConfigMap{}); err != nil {
			t.Errorf("the dry run pruned the ConfigMap: %v", err)
		}

		// As `kubectl apply --server-side --dry-run=server` sends it.
		applied := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "stencil.dev/v1alpha1", "kind": "Composition",
			"metadata": map[string]any{"name": "shop", "namespace": ns},
			"spec":     map[string]any{"bundle": b.Name, "values": map[string]any{"replicas": int64(4), "password": "first-secret"}},
		}}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied), client.FieldOwner("kubectl"), client.ForceOwnership, client.DryRunAll); err != nil {
			t.Fatalf("dry-run apply: %v", err)
		}
		if got, want := warnings.Take(), []string{"stencil: Deployment/shop: spec.replicas 2 → 4"}; !slices.Equal(got, want) {
			t.Errorf("dry-run apply warnings %q, want %q", got, want)
		}

		// Rendering nothing prunes nothing: the controller stalls instead.
		dryRunUpdate(`{"off":true,"extra":false}`)
		if got := warnings.Take(); len(got) != 1 || !strings.Contains(got[0], "renders no objects") || !strings.Contains(got[0], "EmptyRender") {
			t.Errorf("warnings %q; want one saying the controller would prune nothing (EmptyRender)", got)
		}
	})

	t.Run("the controller's own writes pass when the Bundle breaks", func(t *testing.T) {
		comp := suite.Composition(ns, "doomed", b.Name, "")
		env.MustCreate(t, comp)
		env.Exists(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed"}})
		testenv.Eventually(t, 0, "the finalizer on doomed", func() (bool, error) {
			err := env.Get(ctx, client.ObjectKeyFromObject(comp), comp)
			return len(comp.Finalizers) > 0, err
		})
		env.UpdateBundle(t, b.Name, func(s *v1alpha1.BundleSpec) {
			s.Files["templates/broken.yaml"] = `{{ fail "the bundle is broken" }}`
		})
		env.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
		// Each try is a dry run: the webhook reviews once its cache holds
		// the broken revision, and a review that misses its deadline on a
		// busy machine is let through (failurePolicy Ignore), which, as a
		// real update, would store the change and leave every later try
		// with no change to review.
		testenv.Eventually(t, 0, "a spec change of doomed to be refused", func() (bool, error) {
			var err error
			if rerr := env.Retry(ctx, comp, func() error {
				comp.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":1}`)}
				err = env.Update(ctx, comp, client.DryRunAll)
				if apierrors.IsConflict(err) {
					return err
				}
				return nil
			}); rerr != nil {
				return false, rerr
			}
			return apierrors.IsInvalid(err), err
		})
		env.UpdateComposition(t, comp, func(c *v1alpha1.Composition) { c.Annotations = map[string]string{"example.com/note": "still here"} })
		if err := env.Delete(ctx, comp); err != nil {
			t.Fatal(err)
		}
		env.Gone(t, comp)
	})

	t.Run("a render that fails with its lookups empty is admitted with a warning", func(t *testing.T) {
		// The review answers every lookup empty; the controller answers
		// them from the cluster, where this chart renders.
		env.MustCreate(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "needed"}, Data: map[string]string{"v": "here"}})
		needs := env.Bundle(t, "adm-needs-"+ns, map[string]string{
			"templates/result.yaml": "{{- $s := lookup \"v1\" \"ConfigMap\" .Release.Namespace \"needed\" }}\n" +
				"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: result\ndata:\n  v: {{ required \"ConfigMap needed is required\" (dig \"data\" \"v\" \"\" $s) | quote }}\n",
		})
		env.BundleReady(t, needs.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
		wc, warnings := env.WarningClient(t)
		// The webhook reviews a Composition of the Bundle once its own
		// cache holds the Bundle and its revision, some time after the
		// Bundle is Ready (before, it lets it through warning that the
		// Bundle is not found, or not ready): a dry run tells when.
		testenv.Eventually(t, 0, "the webhook to render Bundle "+needs.Name, func() (bool, error) {
			warnings.Take()
			err := wc.Create(ctx, suite.Composition(ns, "needs", needs.Name, ""), client.DryRunAll)
			got := strings.Join(warnings.Take(), "\n")
			return err == nil && strings.Contains(got, "rendered with every lookup empty"), fmt.Errorf("err %v, warnings %q", err, got)
		})
		if err := wc.Create(ctx, suite.Composition(ns, "needs", needs.Name, "")); err != nil {
			t.Fatalf("refused: %v", err)
		}
		if got := strings.Join(warnings.Take(), "\n"); !strings.Contains(got, "rendered with every lookup empty") {
			t.Errorf("warnings %q, want one saying the review answered the lookups empty", got)
		}
		env.Condition(t, ns, "needs", v1alpha1.ConditionReady, metav1.ConditionTrue)
	})
}

// TestAdmissionPublishedKind: an instance of a published kind that fails
// to render is refused; the entry for the kind appears once it is served.
func TestAdmissionPublishedKind(t *testing.T) {
	env.StartAdmission(t, admission.DefaultWebhookConfigName, "admission", map[string]string{suite.AdmissionLabel: "true"}, admission.Options{})
	ctx := context.Background()
	ns := env.AdmissionNamespace(t)
	group := "adm-" + ns + ".example.com"
	env.GrantKind(t, group, "gadgets")
	extra := `{{ if eq (.Values.color | default "") "blue" }}{{ fail "blue is out of stock" }}{{ end }}`
	b := env.Bundle(t, "adm-gadgets-"+ns, suite.GadgetFiles(extra), suite.Publishing(group))
	env.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	publishedRule(t, group, true)
	// The kind's binding of stencil's admission policy reaches the API
	// server some time after the Bundle is Ready: until then the policy
	// does not check an instance's annotations (see odd below).
	testenv.WaitKindChecked(t, env.Client, suite.Gadget(group, ns, "probe", `{"size":1,"color":"red"}`), 0)
	// The mutating configuration's published entry gives an instance its
	// ApplySet metadata at admission, as a Composition's.
	testenv.Eventually(t, 0, "a Gadget admitted with its ApplySet metadata", func() (bool, error) {
		probe := suite.Gadget(group, ns, "probe", `{"size":1,"color":"red"}`)
		err := env.Create(ctx, probe, client.DryRunAll)
		return err == nil && probe.GetLabels()[applyset.LabelApplySetID] != "" && slices.Contains(probe.GetFinalizers(), v1alpha1.Finalizer), err
	})

	testenv.Eventually(t, 0, "the webhook to refuse a blue Gadget", func() (bool, error) {
		err := env.Create(ctx, suite.Gadget(group, ns, "blue", `{"size":1,"color":"blue"}`), client.DryRunAll)
		return apierrors.IsInvalid(err), err
	})
	msg := suite.Denied(t, env.Create(ctx, suite.Gadget(group, ns, "blue", `{"size":1,"color":"blue"}`)))
	if !strings.Contains(msg, "templates/cm.yaml:") {
		t.Errorf("refusal %q: want templates/cm.yaml:<line>", msg)
	}
	if err := env.Create(ctx, suite.Gadget(group, ns, "red", `{"size":1,"color":"red"}`)); err != nil {
		t.Errorf("a valid instance was refused: %v", err)
	}
	// A bad knob annotation: refused by stencil's admission policy, before
	// the webhook.
	odd := suite.Gadget(group, ns, "odd", `{"size":1}`)
	odd.SetAnnotations(map[string]string{publish.AnnotationPrune: "sometimes-9c1e"})
	if err := env.Create(ctx, odd); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), publish.AnnotationPrune) || strings.Contains(err.Error(), "sometimes-9c1e") {
		t.Errorf("refusal %v: want it Invalid, the annotation named, without its value", err)
	}
	c, warnings := env.WarningClient(t)
	if err := c.Create(ctx, suite.Composition(ns, "orphan", "no-such-bundle-"+ns, "")); err != nil {
		t.Fatalf("a Composition of an unknown Bundle was refused: %v", err)
	}
	want := "stencil: Bundle no-such-bundle-" + ns + " not found; the controller will report"
	if got := warnings.Take(); !slices.Contains(got, want) {
		t.Errorf("warnings %q lack %q", got, want)
	}

	if err := env.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	publishedRule(t, group, false)
}

// publishedRule waits until the published entry of the webhook
// configuration has a rule for gadgets in group (want), or no longer has.
func publishedRule(t *testing.T, group string, want bool) {
	t.Helper()
	testenv.Eventually(t, 0, fmt.Sprintf("the published entry to have a rule for %s: %v", group, want), func() (bool, error) {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Get(context.Background(), client.ObjectKey{Name: admission.DefaultWebhookConfigName}, cfg); err != nil {
			return false, err
		}
		// The render entry fails open; no entry of the access check an
		// earlier stencil served is left (the admission policy checks).
		has := map[string]bool{}
		for _, h := range cfg.Webhooks {
			if strings.HasPrefix(h.Name, "access.") {
				return false, fmt.Errorf("an entry of the access check is left: %s", h.Name)
			}
			if h.Name != admission.PublishedWebhookName {
				continue
			}
			if h.FailurePolicy == nil || *h.FailurePolicy != admissionregistrationv1.Ignore || h.ClientConfig.URL == nil {
				return false, fmt.Errorf("the published entry %s is not sent as the Compositions' one, or its failure policy is not Ignore: %+v", h.Name, h)
			}
			for _, r := range h.Rules {
				has[h.Name] = has[h.Name] || slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, "gadgets")
			}
		}
		return has[admission.PublishedWebhookName] == want, fmt.Errorf("webhooks %+v", cfg.Webhooks)
	})
}

// TestAdmissionTimeout: a review that does not finish within the
// webhook's Timeout is allowed with a warning.
func TestAdmissionTimeout(t *testing.T) {
	ns := env.AdmissionNamespace(t)
	env.StartAdmission(t, "stencil-validating-timeout", "admission-timeout", map[string]string{"kubernetes.io/metadata.name": ns},
		admission.Options{Timeout: 300 * time.Millisecond})
	b := env.Bundle(t, "adm-slow-"+ns, suite.ShopFiles(), suite.WithShopSchema)
	env.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	env.Refusing(t, ns, b.Name)
	c, warnings := env.WarningClient(t)
	if err := c.Create(context.Background(), suite.Composition(ns, "slow", b.Name, `{"slow":true}`)); err != nil {
		t.Fatalf("a Composition whose review timed out was refused: %v", err)
	}
	want := "stencil: validation did not finish in 300ms; the controller will report"
	if got := warnings.Take(); !slices.Contains(got, want) {
		t.Errorf("warnings %q lack %q", got, want)
	}
}

// TestAdmissionWaitsForReady: with AdmissionOptions.Ready, the webhook
// server starts (and reads its certificate) only once Ready is closed;
// until then the API server lets requests through the render entry
// (failurePolicy Ignore): what the review would refuse is admitted
// unreviewed, and the controller reports it.
func TestAdmissionWaitsForReady(t *testing.T) {
	ns := env.AdmissionNamespace(t)
	ready := make(chan struct{})
	env.StartAdmission(t, "stencil-validating-ready", "admission-ready", map[string]string{"kubernetes.io/metadata.name": ns},
		admission.Options{Ready: ready})
	b := env.Bundle(t, "adm-ready-"+ns, suite.ShopFiles(), suite.WithShopSchema)
	env.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	if err := env.Create(context.Background(), suite.Composition(ns, "early", b.Name, `{"replicas":9}`), client.DryRunAll); err != nil {
		t.Errorf("before Ready was closed: got %v, want the request let through unreviewed", err)
	}
	close(ready)
	env.Refusing(t, ns, b.Name)
}
