package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// admissionLabel marks the namespaces whose requests the admission tests'
// webhook configuration sends to the webhook: the package's other tests
// never go through admission.
const admissionLabel = "stencil.dev/admission-test"

// shopFiles render a Deployment and a Secret unless values.off and,
// while values.extra is true, a ConfigMap; values.mode "bad" fails at templates/cm.yaml line 6,
// values.slow takes seconds.
var shopFiles = map[string]string{
	"values.yaml": "replicas: 2\npassword: first-secret\nextra: true\nmode: good\nslow: false\n",
	"templates/deploy.yaml": `{{- if not .Values.off }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Composition.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
{{- end }}
`,
	"templates/secret.yaml": `{{- if not .Values.off }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Composition.Name }}
stringData:
  password: {{ .Values.password | quote }}
{{- end }}
`,
	"templates/cm.yaml": `{{- if .Values.extra }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}-extra
data: {mode: {{ .Values.mode | quote }}}{{ if eq .Values.mode "bad" }}{{ fail "mode bad is not supported" }}{{ end }}
{{- end }}
`,
	// scrypt, 0.1 to 0.3 s a call, 15 times.
	"templates/slow.yaml": `{{ if .Values.slow }}{{ range until 15 }}{{ $p := derivePassword 1 "long" "password" "user" "example.com" }}{{ end }}{{ end }}`,
}

const shopSchema = `{"type":"object","properties":{
  "replicas":{"type":"integer","minimum":1,"maximum":5},
  "password":{"type":"string"},
  "extra":{"type":"boolean"},
  "slow":{"type":"boolean"},
  "off":{"type":"boolean"},
  "mode":{"type":"string","enum":["good","bad"]}}}`

func withShopSchema(s *v1alpha1.BundleSpec) {
	s.Schema = &apiextensionsv1.JSON{Raw: []byte(shopSchema)}
}

// warningRecorder keeps the warnings the API server returns.
type warningRecorder struct {
	mu   sync.Mutex
	list []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// take returns the warnings recorded so far and forgets them.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// warningClient returns a cluster admin's client whose warnings w records.
func warningClient(t *testing.T) (client.Client, *warningRecorder) {
	t.Helper()
	w := &warningRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: k.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}

// startAdmission installs a copy of config/webhook named name whose entries
// select the namespaces labelled selector, and starts a controller of shard
// that serves the webhook with admission's options (a shard no Composition
// of these tests is in: the package's controller reconciles them). Both
// go when the test ends.
func startAdmission(t testing.TB, name, shard string, selector map[string]string, opts admission.Options) {
	t.Helper()
	hooks, err := testenv.InstallWebhooks(env.Config, name, &metav1.LabelSelector{MatchLabels: selector})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(suiteCtx)
	opts.ConfigName, opts.MutatingConfigName = name, name+"-mutating"
	c, err := testenv.StartWith(ctx, controllerCfg, testenv.ControllerOptions{Shard: shard, Webhooks: hooks, Admission: opts, WriteAsController: true})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-c.Done
		_ = k.Delete(context.Background(), &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}})
		_ = k.Delete(context.Background(), &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name + "-mutating"}})
		_ = hooks.Cleanup()
	})
}

// refusing waits until the webhook refuses a Composition of bundle in ns
// with invalid values (a dry run): until its server serves, and its cache
// holds the Bundle, the API server lets every request through
// (failurePolicy Ignore).
func refusing(t *testing.T, ns, bundle string) {
	t.Helper()
	eventually(t, "the webhook to refuse invalid values", func() (bool, error) {
		err := k.Create(context.Background(), composition(ns, "probe", bundle, `{"replicas":9}`), client.DryRunAll)
		return apierrors.IsInvalid(err), err
	})
}

// recorded waits until the status of Composition ns/name, for its
// generation, records an inventory holding every one of kinds (Kind.group,
// Kind for the core group). A dry run lists as would-be-pruned only the
// members of the kinds the status records, and compares each child with
// the live one: it previews a Composition as it stands only once a pass
// has applied its members and written its status, some time after the
// members appear.
func recorded(t *testing.T, ns, name string, kinds ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("Composition %s to record %v", name, kinds), func() (bool, error) {
		c := &v1alpha1.Composition{}
		if err := k.Get(context.Background(), key(ns, name), c); err != nil {
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

// admissionNamespace creates a namespace with labels (and admissionLabel)
// for one test, deleted when it ends.
func admissionNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "adm-" + rand.String(8), Labels: map[string]string{admissionLabel: "true"}}}
	mustCreate(t, ns)
	t.Cleanup(func() { _ = k.Delete(context.Background(), ns) })
	return ns.Name
}

// denied checks that err is the webhook's refusal, as an Invalid error,
// and returns its message.
func denied(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		t.Fatal("the request was admitted; want it refused")
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `admission webhook "`) {
		t.Fatalf("got %v; want the webhook's refusal, reason Invalid", err)
	}
	t.Logf("refused: %v", err)
	return err.Error()
}

// TestAdmission: the webhook refuses what would stall before anything is
// stored, admits the rest, says on a dry run what the children would
// become, and never stands in the controller's way.
func TestAdmission(t *testing.T) {
	startAdmission(t, admission.DefaultWebhookConfigName, "admission", map[string]string{admissionLabel: "true"}, admission.Options{})
	ctx := context.Background()
	ns := admissionNamespace(t)
	b := bundle(t, "adm-shop-"+ns, shopFiles, withShopSchema)
	bundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	refusing(t, ns, b.Name)

	t.Run("invalid values are refused with the field path, never the value", func(t *testing.T) {
		err := k.Create(ctx, composition(ns, "bad-values", b.Name, `{"replicas":3,"mode":"not-a-mode-7f3a"}`))
		msg := denied(t, err)
		if !strings.Contains(msg, "mode") || strings.Contains(msg, "not-a-mode-7f3a") {
			t.Errorf("refusal %q: want the field path mode, without its value", msg)
		}
		if err := k.Get(ctx, key(ns, "bad-values"), &v1alpha1.Composition{}); !apierrors.IsNotFound(err) {
			t.Errorf("the refused Composition was stored: get says %v", err)
		}
	})

	t.Run("a template that fails is refused naming its file and line", func(t *testing.T) {
		msg := denied(t, k.Create(ctx, composition(ns, "bad-template", b.Name, `{"mode":"bad"}`)))
		if !strings.Contains(msg, "templates/cm.yaml:6") {
			t.Errorf("refusal %q: want templates/cm.yaml:6", msg)
		}
		if err := k.Get(ctx, key(ns, "bad-template-extra"), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("a child of the refused Composition exists: get says %v", err)
		}
	})

	shop := composition(ns, "shop", b.Name, `{"replicas":2,"password":"first-secret"}`)
	t.Run("a valid Composition is admitted", func(t *testing.T) {
		c, warnings := warningClient(t)
		if err := c.Create(ctx, shop); err != nil {
			t.Fatalf("create: %v", err)
		}
		if w := warnings.take(); len(w) > 0 {
			t.Errorf("warnings %q; want none", w)
		}
		exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-extra"}})
		exists(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}})
		exists(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}})
	})

	t.Run("a dry run says what the children would become", func(t *testing.T) {
		// What the preview compares with: every member applied, and the
		// kinds recorded (the ConfigMap to prune is found by its kind).
		recorded(t, ns, "shop", "ConfigMap", "Deployment.apps", "Secret")
		c, warnings := warningClient(t)
		// The controller writes the Composition while the test runs: each
		// dry run reads it afresh and is sent again on a conflict, keeping
		// only the warnings of the attempt that went through.
		comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}}
		dryRunUpdate := func(values string) {
			t.Helper()
			err := updateFresh(ctx, comp, func() error {
				warnings.take()
				comp.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(values)}
				return c.Update(ctx, comp, client.DryRunAll)
			})
			if err != nil {
				t.Fatalf("dry-run update: %v", err)
			}
		}
		dryRunUpdate(`{"replicas":3,"password":"second-secret","extra":false}`)
		got := warnings.take()
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
		if err := k.Get(ctx, key(ns, "shop"), dep); err != nil || *dep.Spec.Replicas != 2 {
			t.Errorf("the dry run changed the Deployment: replicas %v, err %v", dep.Spec.Replicas, err)
		}
		if err := k.Get(ctx, key(ns, "shop-extra"), &corev1.ConfigMap{}); err != nil {
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
		if got, want := warnings.take(), []string{"stencil: Deployment/shop: spec.replicas 2 → 4"}; !slices.Equal(got, want) {
			t.Errorf("dry-run apply warnings %q, want %q", got, want)
		}

		// Rendering nothing prunes nothing: the controller stalls instead.
		dryRunUpdate(`{"off":true,"extra":false}`)
		if got := warnings.take(); len(got) != 1 || !strings.Contains(got[0], "renders no objects") || !strings.Contains(got[0], "EmptyRender") {
			t.Errorf("warnings %q; want one saying the controller would prune nothing (EmptyRender)", got)
		}
	})

	t.Run("the controller's own writes pass when the Bundle breaks", func(t *testing.T) {
		comp := composition(ns, "doomed", b.Name, "")
		mustCreate(t, comp)
		exists(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed"}})
		eventually(t, "the finalizer on doomed", func() (bool, error) {
			err := k.Get(ctx, client.ObjectKeyFromObject(comp), comp)
			return len(comp.Finalizers) > 0, err
		})
		updateBundle(t, b.Name, func(s *v1alpha1.BundleSpec) {
			s.Files["templates/broken.yaml"] = `{{ fail "the bundle is broken" }}`
		})
		bundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
		// Each try is a dry run: the webhook reviews once its cache holds
		// the broken revision, and a review that misses its deadline on a
		// busy machine is let through (failurePolicy Ignore), which, as a
		// real update, would store the change and leave every later try
		// with no change to review.
		eventually(t, "a spec change of doomed to be refused", func() (bool, error) {
			var err error
			if rerr := updateFresh(ctx, comp, func() error {
				comp.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":1}`)}
				err = k.Update(ctx, comp, client.DryRunAll)
				if apierrors.IsConflict(err) {
					return err
				}
				return nil
			}); rerr != nil {
				return false, rerr
			}
			return apierrors.IsInvalid(err), err
		})
		update(t, comp, func(c *v1alpha1.Composition) { c.Annotations = map[string]string{"example.com/note": "still here"} })
		if err := k.Delete(ctx, comp); err != nil {
			t.Fatal(err)
		}
		gone(t, comp)
	})

	t.Run("a render that fails with its lookups empty is admitted with a warning", func(t *testing.T) {
		// The review answers every lookup empty; the controller answers
		// them from the cluster, where this chart renders.
		mustCreate(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "needed"}, Data: map[string]string{"v": "here"}})
		needs := bundle(t, "adm-needs-"+ns, map[string]string{
			"templates/result.yaml": "{{- $s := lookup \"v1\" \"ConfigMap\" .Release.Namespace \"needed\" }}\n" +
				"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: result\ndata:\n  v: {{ required \"ConfigMap needed is required\" (dig \"data\" \"v\" \"\" $s) | quote }}\n",
		})
		bundleReady(t, needs.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
		wc, warnings := warningClient(t)
		// The webhook reviews a Composition of the Bundle once its own
		// cache holds the Bundle and its revision, some time after the
		// Bundle is Ready (before, it lets it through warning that the
		// Bundle is not found, or not ready): a dry run tells when.
		eventually(t, "the webhook to render Bundle "+needs.Name, func() (bool, error) {
			warnings.take()
			err := wc.Create(ctx, composition(ns, "needs", needs.Name, ""), client.DryRunAll)
			got := strings.Join(warnings.take(), "\n")
			return err == nil && strings.Contains(got, "rendered with every lookup empty"), fmt.Errorf("err %v, warnings %q", err, got)
		})
		if err := wc.Create(ctx, composition(ns, "needs", needs.Name, "")); err != nil {
			t.Fatalf("refused: %v", err)
		}
		if got := strings.Join(warnings.take(), "\n"); !strings.Contains(got, "rendered with every lookup empty") {
			t.Errorf("warnings %q, want one saying the review answered the lookups empty", got)
		}
		condition(t, ns, "needs", v1alpha1.ConditionReady, metav1.ConditionTrue)
	})
}

// TestAdmissionPublishedKind: an instance of a published kind that fails
// to render is refused; the entry for the kind appears once it is served.
func TestAdmissionPublishedKind(t *testing.T) {
	startAdmission(t, admission.DefaultWebhookConfigName, "admission", map[string]string{admissionLabel: "true"}, admission.Options{})
	ctx := context.Background()
	ns := admissionNamespace(t)
	group := "adm-" + ns + ".example.com"
	grantKind(t, group, "gadgets")
	extra := `{{ if eq (.Values.color | default "") "blue" }}{{ fail "blue is out of stock" }}{{ end }}`
	b := bundle(t, "adm-gadgets-"+ns, gadgetFiles(extra), publishing(group))
	bundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	publishedRule(t, group, true)
	// The kind's binding of stencil's admission policy reaches the API
	// server some time after the Bundle is Ready: until then the policy
	// does not check an instance's annotations (see odd below).
	testenv.WaitKindChecked(t, k, gadget(group, ns, "probe", `{"size":1,"color":"red"}`), 0)
	// The mutating configuration's published entry gives an instance its
	// ApplySet metadata at admission, as a Composition's.
	eventually(t, "a Gadget admitted with its ApplySet metadata", func() (bool, error) {
		probe := gadget(group, ns, "probe", `{"size":1,"color":"red"}`)
		err := k.Create(ctx, probe, client.DryRunAll)
		return err == nil && probe.GetLabels()[applyset.LabelApplySetID] != "" && slices.Contains(probe.GetFinalizers(), v1alpha1.Finalizer), err
	})

	eventually(t, "the webhook to refuse a blue Gadget", func() (bool, error) {
		err := k.Create(ctx, gadget(group, ns, "blue", `{"size":1,"color":"blue"}`), client.DryRunAll)
		return apierrors.IsInvalid(err), err
	})
	msg := denied(t, k.Create(ctx, gadget(group, ns, "blue", `{"size":1,"color":"blue"}`)))
	if !strings.Contains(msg, "templates/cm.yaml:") {
		t.Errorf("refusal %q: want templates/cm.yaml:<line>", msg)
	}
	if err := k.Create(ctx, gadget(group, ns, "red", `{"size":1,"color":"red"}`)); err != nil {
		t.Errorf("a valid instance was refused: %v", err)
	}
	// A bad knob annotation: refused by stencil's admission policy, before
	// the webhook.
	odd := gadget(group, ns, "odd", `{"size":1}`)
	odd.SetAnnotations(map[string]string{publish.AnnotationPrune: "sometimes-9c1e"})
	if err := k.Create(ctx, odd); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), publish.AnnotationPrune) || strings.Contains(err.Error(), "sometimes-9c1e") {
		t.Errorf("refusal %v: want it Invalid, the annotation named, without its value", err)
	}
	c, warnings := warningClient(t)
	if err := c.Create(ctx, composition(ns, "orphan", "no-such-bundle-"+ns, "")); err != nil {
		t.Fatalf("a Composition of an unknown Bundle was refused: %v", err)
	}
	want := "stencil: Bundle no-such-bundle-" + ns + " not found; the controller will report"
	if got := warnings.take(); !slices.Contains(got, want) {
		t.Errorf("warnings %q lack %q", got, want)
	}

	if err := k.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	publishedRule(t, group, false)
}

// publishedRule waits until the published entry of the webhook
// configuration has a rule for gadgets in group (want), or no longer has.
func publishedRule(t *testing.T, group string, want bool) {
	t.Helper()
	eventually(t, fmt.Sprintf("the published entry to have a rule for %s: %v", group, want), func() (bool, error) {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := k.Get(context.Background(), client.ObjectKey{Name: admission.DefaultWebhookConfigName}, cfg); err != nil {
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
	ns := admissionNamespace(t)
	startAdmission(t, "stencil-validating-timeout", "admission-timeout", map[string]string{"kubernetes.io/metadata.name": ns},
		admission.Options{Timeout: 300 * time.Millisecond})
	b := bundle(t, "adm-slow-"+ns, shopFiles, withShopSchema)
	bundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	refusing(t, ns, b.Name)
	c, warnings := warningClient(t)
	if err := c.Create(context.Background(), composition(ns, "slow", b.Name, `{"slow":true}`)); err != nil {
		t.Fatalf("a Composition whose review timed out was refused: %v", err)
	}
	want := "stencil: validation did not finish in 300ms; the controller will report"
	if got := warnings.take(); !slices.Contains(got, want) {
		t.Errorf("warnings %q lack %q", got, want)
	}
}

// TestAdmissionWaitsForReady: with AdmissionOptions.Ready, the webhook
// server starts (and reads its certificate) only once Ready is closed;
// until then the API server lets requests through the render entry
// (failurePolicy Ignore): what the review would refuse is admitted
// unreviewed, and the controller reports it.
func TestAdmissionWaitsForReady(t *testing.T) {
	ns := admissionNamespace(t)
	ready := make(chan struct{})
	startAdmission(t, "stencil-validating-ready", "admission-ready", map[string]string{"kubernetes.io/metadata.name": ns},
		admission.Options{Ready: ready})
	b := bundle(t, "adm-ready-"+ns, shopFiles, withShopSchema)
	bundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	if err := k.Create(context.Background(), composition(ns, "early", b.Name, `{"replicas":9}`), client.DryRunAll); err != nil {
		t.Errorf("before Ready was closed: got %v, want the request let through unreviewed", err)
	}
	close(ready)
	refusing(t, ns, b.Name)
}
