package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testArticlesStatus checks the status fields the articles' controllers
// wrote, as their users read them: Foo's and AppService's
// availableReplicas are their Deployment's; the CloudManager's phase is
// ready with a quorum of its database, shown in its Status column, and
// follows the database when its pod goes away (kwok runs it again),
// recording an Updated event on each change.
func testArticlesStatus(t *testing.T, k client.Client, kc kubectl) {
	ctx := context.Background()
	for _, tc := range []struct{ resource, name string }{{"foo", "example-foo"}, {"appservice", "nginx-app"}} {
		eventually(t, 2*time.Minute, tc.resource+" availableReplicas to be its Deployment's", func() (bool, error) {
			dep := &appsv1.Deployment{}
			if err := k.Get(ctx, client.ObjectKey{Namespace: "default", Name: tc.name}, dep); err != nil {
				return false, err
			}
			out, errOut, err := kc.run("", "get", tc.resource, tc.name, "-o", "jsonpath={.status.availableReplicas}")
			want := fmt.Sprint(dep.Status.AvailableReplicas)
			return err == nil && dep.Status.AvailableReplicas > 0 && out == want, fmt.Errorf("kubectl: %q (%v %s), Deployment: %s", out, err, errOut, want)
		})
	}

	phase := func(want string) {
		t.Helper()
		eventually(t, 3*time.Minute, "the CloudManager's phase "+want, func() (bool, error) {
			out, errOut, err := kc.run("", "get", "cloudmanagers", "cloudmanager-sample")
			if err != nil {
				return false, fmt.Errorf("%v: %s", err, errOut)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 {
				return false, fmt.Errorf("%s", out)
			}
			col, fields := statusColumn(lines[0]), strings.Fields(lines[1])
			return col >= 0 && col < len(fields) && fields[col] == want, fmt.Errorf("%s", out)
		})
	}
	updated := func(change string) {
		t.Helper()
		eventually(t, 3*time.Minute, "an Updated event saying "+change, func() (bool, error) {
			var list corev1.EventList
			if err := k.List(ctx, &list, client.InNamespace("default")); err != nil {
				return false, err
			}
			for _, e := range list.Items {
				if e.Reason == "Updated" && e.InvolvedObject.Name == "cloudmanager-sample" && strings.Contains(e.Message, change) {
					return true, nil
				}
			}
			return false, fmt.Errorf("no such event among %d", len(list.Items))
		})
	}
	phase("ready")
	updated(`phase: `)

	// The database's one pod goes: no quorum until it runs again. The
	// nodes are cordoned first, so its replacement stays Pending until the
	// controller has seen the quorum lost, however slow this machine.
	cordon(t, k, true)
	defer cordon(t, k, false)
	if err := k.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cm-db-0"}}); err != nil {
		t.Fatalf("delete the database's pod: %v", err)
	}
	updated(`phase: "ready" → "creating"`)
	cordon(t, k, false)
	phase("ready")
	updated(`phase: "creating" → "ready"`)
}

// cordon marks every node unschedulable (on) or schedulable again.
func cordon(t *testing.T, k client.Client, on bool) {
	t.Helper()
	ctx := context.Background()
	var nodes corev1.NodeList
	if err := k.List(ctx, &nodes); err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Spec.Unschedulable == on {
			continue
		}
		patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)))
		if err := k.Patch(ctx, n, patch); err != nil {
			t.Fatalf("cordon node %s (%v): %v", n.Name, on, err)
		}
	}
}

// statusColumn is the index of the STATUS column in kubectl's header line.
func statusColumn(header string) int {
	for i, f := range strings.Fields(header) {
		if f == "STATUS" {
			return i
		}
	}
	return -1
}
