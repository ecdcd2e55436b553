package authority_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/authority"
)

// powerfulAccount makes ServiceAccount name in ns, which may write
// ConfigMaps there: what stencil would write as it shows. It returns once
// the API server's authorizer applies the grant: a pass acting as the
// account before would stall Forbidden, and look again only a minute
// later.
func powerfulAccount(t *testing.T, ns, name string) {
	t.Helper()
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}
	env.MustCreate(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	env.MustCreate(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules})
	env.MustCreate(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}})
	testenv.WaitGranted(t, env.Client, testenv.ServiceAccountSubject(ns, name), ns, 0, rules...)
}

// refusedTheAccount waits until stencil's admission policy refuses c the
// dry-run create of obj for the use of its ServiceAccount: the kind's
// binding and parameters have reached the API server (before, it refuses
// every instance "no Bundle publishes", or checks none) and c's own RBAC
// lets the request through to the policy.
func refusedTheAccount(t *testing.T, c client.Client, user string, obj client.Object) {
	t.Helper()
	testenv.Eventually(t, 0, "the admission policy to refuse "+user+" the account", func() (bool, error) {
		err := c.Create(context.Background(), obj.DeepCopyObject().(client.Object), client.DryRunAll)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+authority.PolicyName+"'") &&
			strings.Contains(err.Error(), `user "`+user+`" may not use ServiceAccount`), err
	})
}

// asPowerful is an instance of Gadget that names ServiceAccount powerful.
func asPowerful(group, ns, name string) *unstructured.Unstructured {
	g := suite.Gadget(group, ns, name, `{"size":1}`)
	g.SetAnnotations(map[string]string{publish.AnnotationServiceAccountName: "powerful"})
	return g
}

// instanceStatus reads the status of the Gadget name.
func instanceStatus(t *testing.T, group, ns, name string) v1alpha1.CompositionStatus {
	t.Helper()
	u := suite.Gadget(group, ns, name, "")
	st := v1alpha1.CompositionStatus{}
	if err := env.Get(context.Background(), client.ObjectKeyFromObject(u), u); err != nil {
		t.Fatalf("Gadget %s: %v", name, err)
	}
	if m, ok := u.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// TestNoWindowInTheAuthorityCheck (issue 29 item 1): a user who may create
// a published kind's instances but may not use ServiceAccount powerful
// creates, in a loop, instances naming it, while the controller restarts,
// the Bundle is deleted and applied again (its deletion policy Orphan
// keeps the CRD), and a second Bundle claims the kind while the first is
// gone. Not one is admitted, and nothing is ever written as powerful for
// them; an instance the cluster admin names it in is written as it (so
// the setup could write).
func TestNoWindowInTheAuthorityCheck(t *testing.T) {
	ctx := context.Background()
	ns, group, name, _ := env.ServeGadgets(t, "window")
	powerfulAccount(t, ns, "powerful")
	env.Grant(t, ns, "mallory", "mallory", rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"gadgets"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}})
	mallory := env.AsUser(t, "mallory")

	// The kind's binding and parameters reach the API server some time
	// after the Bundle says Ready.
	testenv.WaitKindChecked(t, env.Client, asPowerful(group, ns, "control"), 0)
	env.MustCreate(t, asPowerful(group, ns, "control"))
	env.InstanceReady(t, group, ns, "control", metav1.ConditionTrue)
	refusedTheAccount(t, mallory, "mallory", asPowerful(group, ns, "m-probe"))
	env.Exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "control-conf"}})

	loop := startCreating(ctx, mallory, group, ns)
	defer loop.halt()

	churnTheBundle(t, ns, group, name)
	time.Sleep(time.Second)
	// However slow the machine, the loop has made enough attempts to
	// say something (each waits for the API server's answer).
	testenv.Eventually(t, 0, "20 attempts of mallory's", func() (bool, error) {
		return loop.attempts.Load() >= 20, fmt.Errorf("%d attempts", loop.attempts.Load())
	})
	loop.halt()

	if n := loop.admitted.Load(); n > 0 {
		t.Errorf("%d of %d instances naming powerful were admitted for mallory", n, loop.attempts.Load())
	}
	if len(loop.surprises) > 0 {
		t.Errorf("refusals other than the admission policy's: %v", loop.surprises[:min(3, len(loop.surprises))])
	}
	list := &corev1.ConfigMapList{}
	if err := env.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Name, "m-") {
			t.Errorf("ConfigMap %s was written for one of mallory's instances", cm.Name)
		}
	}
	// The admin's instance is still served, as powerful. The Bundle
	// published the kind again: its parameters reach the API server some
	// time after it is Ready (until then the policy refuses any change,
	// "no Bundle publishes").
	testenv.WaitKindChecked(t, env.Client, asPowerful(group, ns, "control"), 0)
	env.MergePatch(t, suite.Gadget(group, ns, "control", ""), `{"spec":{"size":2}}`, "")
	testenv.Eventually(t, 0, "the admin's instance applied again", func() (bool, error) {
		cm := &corev1.ConfigMap{}
		err := env.Get(ctx, suite.Key(ns, "control-conf"), cm)
		return err == nil && cm.Data["size"] == "2", err
	})
}

// creating is a loop that creates, as a user, an instance of Gadget
// naming ServiceAccount powerful every 20 ms until halted, and counts
// the answers.
type creating struct {
	attempts, admitted atomic.Int64
	// surprises are the refusals other than the admission policy's
	// (read once halted).
	mu        sync.Mutex
	surprises []string
	stop      chan struct{}
	once      sync.Once
	wg        sync.WaitGroup
}

// startCreating starts the loop of c's creates of instances m-0, m-1, ...
// in namespace ns.
func startCreating(ctx context.Context, c client.Client, group, ns string) *creating {
	l := &creating{stop: make(chan struct{})}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			l.attempts.Add(1)
			err := c.Create(ctx, asPowerful(group, ns, fmt.Sprintf("m-%d", i)))
			switch {
			case err == nil:
				l.admitted.Add(1)
			case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+authority.PolicyName+"'"):
			default:
				l.mu.Lock()
				l.surprises = append(l.surprises, err.Error())
				l.mu.Unlock()
			}
		}
	}()
	return l
}

// halt stops the loop and waits for its last create; a second call only
// waits.
func (l *creating) halt() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// churnTheBundle puts Bundle name, publishing Gadgets of group, through
// what could open a window in the authority check: the controller
// restarts, the Bundle is deleted and applied again, and a second Bundle
// claims the kind while the first is gone. The Bundle is Ready at the end.
func churnTheBundle(t *testing.T, ns, group, name string) {
	t.Helper()
	ctx := context.Background()
	// A restart: no webhook, no kind served, until the new controller is up.
	env.Restart(t, func() { time.Sleep(time.Second) })
	env.BundleReady(t, name, metav1.ConditionTrue, v1alpha1.ReasonReady)

	// The Bundle deleted and applied again, as a GitOps tool re-syncing it.
	b := &v1alpha1.Bundle{}
	if err := env.Get(ctx, client.ObjectKey{Name: name}, b); err != nil {
		t.Fatal(err)
	}
	if err := env.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	env.Gone(t, &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}})
	time.Sleep(time.Second)
	again := env.Bundle(t, name, suite.GadgetFiles(""), suite.Publishing(group))
	env.BundleReady(t, again.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)

	// Two claimants: a second Bundle publishes the kind; the first goes,
	// and comes back.
	claimant := env.Bundle(t, "claimant-"+ns, suite.GadgetFiles(""), suite.Publishing(group))
	env.BundleReady(t, claimant.Name, metav1.ConditionFalse, v1alpha1.ReasonKindConflict)
	if err := env.Delete(ctx, again); err != nil {
		t.Fatal(err)
	}
	env.Gone(t, &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}})
	time.Sleep(time.Second)
	env.Bundle(t, name, suite.GadgetFiles(""), suite.Publishing(group))
	env.BundleReady(t, name, metav1.ConditionTrue, v1alpha1.ReasonReady)
}

// TestAWindowElsewhereIsNoWrite (issue 29 item 1): while the controller is
// stopped, the kind's binding of the admission policy is deleted (a
// mistake, a tool pruning it): the API server then checks nothing, and an
// instance naming powerful is admitted for a user who may not use it. The
// controller, back, binds the kind again, but never writes for that
// instance: it predates the check that now applies (Stalled, reason
// NotAdmitted, a record waiting in status.admission). A change by the
// cluster admin, who may use the account, admits it.
func TestAWindowElsewhereIsNoWrite(t *testing.T) {
	ctx := context.Background()
	ns, group, _, _ := env.ServeGadgets(t, "elsewhere")
	powerfulAccount(t, ns, "powerful")
	env.Grant(t, ns, "mallory", "mallory", rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"gadgets"}, Verbs: []string{"get", "create", "update", "patch"}})
	mallory := env.AsUser(t, "mallory")
	gr := schema.GroupResource{Group: group, Resource: "gadgets"}
	// Before the window, the API server checks the kind.
	refusedTheAccount(t, mallory, "mallory", asPowerful(group, ns, "probe"))
	var oldUID string
	env.Restart(t, func() {
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := env.Get(ctx, client.ObjectKey{Name: authority.KindBindingName(gr)}, b); err != nil {
			t.Fatal(err)
		}
		oldUID = string(b.UID)
		if err := env.Delete(ctx, b); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 0, "the API server to stop checking the kind", func() (bool, error) {
			err := mallory.Create(ctx, asPowerful(group, ns, "sneak"))
			return err == nil, err
		})
	})
	testenv.Eventually(t, 0, "the kind bound again", func() (bool, error) {
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		err := env.Get(ctx, client.ObjectKey{Name: authority.KindBindingName(gr)}, b)
		return err == nil && string(b.UID) != oldUID, err
	})
	testenv.Eventually(t, 0, "the sneaked instance stalled, not admitted", func() (bool, error) {
		st := instanceStatus(t, group, ns, "sneak")
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionStalled)
		return c != nil && c.Reason == v1alpha1.ReasonNotAdmitted && st.Admission != nil && !st.Admission.Admitted && st.Admission.Generation > 0,
			fmt.Errorf("conditions %+v admission %+v", st.Conditions, st.Admission)
	})
	testenv.Consistently(t, 3*time.Second, "nothing written for the sneaked instance", func() (bool, error) {
		err := env.Get(ctx, suite.Key(ns, "sneak-conf"), &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	// The new binding reaches the API server's policy plugin some time
	// after it was made: mallory's touch is refused from then on.
	refusedTheAccount(t, mallory, "mallory", asPowerful(group, ns, "probe"))
	if err := mallory.Patch(ctx, suite.Gadget(group, ns, "sneak", ""), client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"touched":"mallory"}}}`))); !apierrors.IsForbidden(err) {
		t.Errorf("mallory's own touch of the instance: %v, want it refused", err)
	}

	// The admin may use powerful: their change admits the instance.
	env.MergePatch(t, suite.Gadget(group, ns, "sneak", ""), `{"metadata":{"annotations":{"stencil.dev/readmitted":"by the admin"}}}`, "")
	env.InstanceReady(t, group, ns, "sneak", metav1.ConditionTrue)
	env.Exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sneak-conf"}})
	if st := instanceStatus(t, group, ns, "sneak"); st.Admission == nil || !st.Admission.Admitted {
		t.Errorf("admission record %+v, want admitted", st.Admission)
	}
}

// TestUpdatesAndDeletionAreChecked (issue 29 item 2): a user who may
// update a Composition but not use its ServiceAccount may not change any
// label or annotation a render sees (applyset.kubernetes.io/* keys
// included, but the four stencil writes); once the Composition is being
// deleted, nobody may change its spec, labels or annotations (not even
// one who may use the account), so finalize deletes its members as the
// account it had.
func TestUpdatesAndDeletionAreChecked(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "frozen-"+ns, suite.TwoConfigMaps())
	powerfulAccount(t, ns, "deployer")
	powerfulAccount(t, ns, "other")
	env.Grant(t, ns, "alice", "alice", suite.CompositionsRule)
	env.Grant(t, ns, "bob", "bob", suite.CompositionsRule, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"},
		Verbs: []string{"impersonate"}, ResourceNames: []string{"deployer", "other"}})
	alice, bob := env.AsUser(t, "alice"), env.AsUser(t, "bob")
	comp := suite.Composition(ns, "app", b.Name, `{}`)
	comp.Spec.ServiceAccountName = "deployer"
	if err := bob.Create(ctx, comp); err != nil {
		t.Fatal(err)
	}
	env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	env.Exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keep"}})

	as := func(c client.Client, change func(*v1alpha1.Composition)) error {
		return env.Retry(ctx, comp, func() error { change(comp); return c.Update(ctx, comp) })
	}
	setAnnotation := func(k, v string) func(*v1alpha1.Composition) {
		return func(c *v1alpha1.Composition) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[k] = v
		}
	}
	suite.ForbiddenBy(t, as(alice, setAnnotation("applyset.kubernetes.io/part-of", "x")), `user "alice" may not use ServiceAccount `+ns+`/deployer`)
	suite.ForbiddenBy(t, as(alice, setAnnotation("applyset.kubernetes.io/something", "x")), `user "alice" may not use ServiceAccount `+ns+`/deployer`)
	if err := as(alice, setAnnotation("applyset.kubernetes.io/tooling", "stencil/v0.0.0-test")); err != nil {
		t.Errorf("alice's change of one of the keys stencil writes itself: %v", err)
	}

	// Deletion: a second finalizer keeps the Composition after stencil's
	// finalize, so that changes can be tried all along.
	if err := as(env.Client, func(c *v1alpha1.Composition) { c.Finalizers = append(c.Finalizers, "example.com/hold") }); err != nil {
		t.Fatal(err)
	}
	if err := env.Delete(ctx, comp); err != nil {
		t.Fatal(err)
	}
	for what, change := range map[string]func(*v1alpha1.Composition){
		"its ServiceAccount":  func(c *v1alpha1.Composition) { c.Spec.ServiceAccountName = "other" },
		"its deletion policy": func(c *v1alpha1.Composition) { c.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan },
		"an annotation":       setAnnotation("note", "x"),
		"its values":          func(c *v1alpha1.Composition) { c.Spec.Values = nil },
	} {
		t.Run(what, func(t *testing.T) { suite.ForbiddenBy(t, as(bob, change), "is being deleted") })
	}
	env.Gone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keep"}})
	testenv.Eventually(t, 0, "stencil's finalizer dropped", func() (bool, error) {
		err := env.Get(ctx, suite.Key(ns, "app"), comp)
		return err == nil && len(comp.Finalizers) == 1, err
	})
	if err := as(env.Client, func(c *v1alpha1.Composition) { c.Finalizers = nil }); err != nil {
		t.Errorf("dropping the last finalizer (no change of what stencil reads): %v", err)
	}
	env.Gone(t, comp)
}
