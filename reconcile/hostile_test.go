package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
)

// hostileTemplates are bundles that would hang, exhaust or crash a
// renderer that ran them in the controller's own process.
var hostileTemplates = map[string]string{
	// Three nested loops: 10^12 iterations.
	"loops": `{{ range until 10000 }}{{ range until 10000 }}{{ range until 10000 }}{{ end }}{{ end }}{{ end }}`,
	// A string doubled until it does not fit in memory.
	"doubling": `{{ $s := "xxxxxxxxxxxxxxxx" }}{{ range until 64 }}{{ $s = printf "%s%s" $s $s }}{{ end }}{{ $s }}`,
	// The tenant's value run as a template: a loop the tenant chose.
	"tpl": `{{ tpl .Values.expr . }}`,
	// A range over a count the tenant chose.
	"count": `{{ range int .Values.count }}{{ . }}{{ end }}`,
}

// TestHostileBundlesStallAlone runs four hostile Compositions at once (as
// many as the controller reconciles at once by default) beside a healthy
// one, and a Composition that was Ready before its Bundle turned hostile:
// each hostile one ends Stalled with a render reason naming its template;
// the healthy one keeps reconciling updates; nothing is pruned from the one
// whose Bundle turned hostile.
func TestHostileBundlesStallAlone(t *testing.T) {
	ns := testenv.Namespace(t, k)
	ctx := context.Background()
	healthy := bundle(t, "healthy-"+ns, suite.TwoConfigMaps())
	mustCreate(t, composition(ns, "healthy", healthy.Name, `{"second":false}`))
	victimNS := testenv.Namespace(t, k)
	victimBundle := bundle(t, "victim-"+ns, suite.TwoConfigMaps())
	mustCreate(t, composition(victimNS, "victim", victimBundle.Name, ""))
	condition(t, ns, "healthy", v1alpha1.ConditionReady, metav1.ConditionTrue)
	condition(t, victimNS, "victim", v1alpha1.ConditionReady, metav1.ConditionTrue)

	// The victim's Bundle turns hostile: it renders nothing any more.
	testenv.Update(t, k, victimBundle, func() {
		victimBundle.Spec.Files = map[string]string{"templates/loops.yaml": hostileTemplates["loops"]}
	})
	values := map[string]string{
		"tpl":   `{"expr":"{{ range until 10000 }}{{ range until 10000 }}{{ range until 10000 }}{{ end }}{{ end }}{{ end }}"}`,
		"count": `{"count":3000000000}`,
	}
	for name, tmpl := range hostileTemplates {
		b := bundle(t, "hostile-"+name+"-"+ns, map[string]string{"templates/" + name + ".yaml": tmpl})
		mustCreate(t, composition(ns, name, b.Name, values[name]))
	}

	// While they render, the healthy Composition takes an update.
	update(t, composition(ns, "healthy", "", ""), func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"second":true}`) })
	exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"}})
	condition(t, ns, "healthy", v1alpha1.ConditionReady, metav1.ConditionTrue)

	// Wait for the render's own stall: a Composition made right after its
	// Bundle may first stall with BundleNotFound, until the Bundle is in
	// the controller's cache, however long that takes on this machine. The
	// stall names the template the render was in, as the render worker
	// last reported it; a render stopped for its time or memory before its
	// worker reported anything (a worker starved of CPU, or one that never
	// took the request) is named by the pool's own message, which knows no
	// file: that is accepted for those reasons, never a message naming
	// another template.
	reasons := []string{v1alpha1.ReasonRenderTimeout, v1alpha1.ReasonRenderTooLarge, v1alpha1.ReasonRenderFailed}
	renderStalled := func(ns, name, file string) {
		t.Helper()
		comp := compositionWith(t, ns, name, testenv.Condition{Type: v1alpha1.ConditionStalled, Reasons: reasons,
			Message: func(m string) bool { return strings.Contains(m, file) || !strings.Contains(m, "templates/") }})
		if st := meta.FindStatusCondition(comp.Status.Conditions, v1alpha1.ConditionStalled); !strings.Contains(st.Message, file) &&
			(st.Reason == v1alpha1.ReasonRenderFailed || !strings.Contains(st.Message, "render stopped: ")) {
			t.Errorf("%s: Stalled %s %q, want it to name %s", name, st.Reason, st.Message, file)
		}
	}
	for name := range hostileTemplates {
		renderStalled(ns, name, "templates/"+name+".yaml")
	}
	renderStalled(victimNS, "victim", "templates/loops.yaml")
	consistently(t, "the victim's members to stay", 2*time.Second, func() (bool, error) {
		for _, name := range []string{"keep", "second"} {
			if err := k.Get(ctx, client.ObjectKey{Namespace: victimNS, Name: name}, &corev1.ConfigMap{}); err != nil {
				return false, fmt.Errorf("ConfigMap %s: %w", name, err)
			}
		}
		return true, nil
	})
}
