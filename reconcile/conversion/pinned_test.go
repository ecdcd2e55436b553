package conversion_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/revision"
)

// TestInstanceOnARevisionBeforeTheVersionChange: an instance that stays
// on a revision written against v1 (here pinned to it; a rollout in waves
// that has not reached it, or the moment before the rollout controller
// moves it, is the same) while the Bundle makes v2 the storage and render
// version is read by the controller in v2, and is rendered with its spec
// in v1, converted by the Bundle's rules as the API server would give it:
// its children are the ones it had, and none is written. Rendering the
// v2 spec with templates written against v1 would drop size (its default
// instead) and range over a map of ports as over a list.
func TestInstanceOnARevisionBeforeTheVersionChange(t *testing.T) {
	ns, group, bundle := publishV1(t)
	first := bundleRevision(t, bundle)
	db := tenants[1]
	pin := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, publish.AnnotationBundleRevision, revision.Name(bundle, first))
	if err := env.Patch(context.Background(), appService(t, group, "v1", ns, db.name, ""), client.RawPatch(types.MergePatchType, []byte(pin))); err != nil {
		t.Fatal(err)
	}
	env.Controller.Settle(t, ns)
	mark := env.Controller.Mark()
	before := stamps(t, group, "v1", ns)

	env.UpdateBundle(t, bundle, evolved(group))
	next := bundleRevision(t, bundle)
	// The others move; db stays pinned.
	for _, tn := range tenants {
		if tn.name == db.name {
			continue
		}
		testenv.Eventually(t, 0, tn.name+" on the new revision", func() (bool, error) {
			return onRevision(group, "v2", ns, tn.name, next)
		})
	}
	env.Controller.Settle(t, ns)
	testenv.Eventually(t, 0, db.name+" Ready on the pinned revision, read in v2", func() (bool, error) {
		return onRevision(group, "v2", ns, db.name, first)
	})
	cm := &corev1.ConfigMap{}
	if err := env.Get(context.Background(), suite.Key(ns, db.name+"-app"), cm); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(db.data, cm.Data); diff != "" {
		t.Errorf("the pinned instance's ConfigMap (-rendered in v1 +now):\n%s", diff)
	}
	if now := stamps(t, group, "v2", ns); now.child[db.name] != before.child[db.name] {
		t.Errorf("the pinned instance's ConfigMap was written: resourceVersion %s, then %s", before.child[db.name], now.child[db.name])
	}
	writes := slices.DeleteFunc(env.Controller.WritesSince(mark, ns), func(r string) bool { return !strings.Contains(r, "/configmaps/"+db.name+"-app") })
	if len(writes) > 0 {
		t.Errorf("the controller wrote the pinned instance's ConfigMap: %q", writes)
	}
}
