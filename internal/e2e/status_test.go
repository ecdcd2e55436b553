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

	"github.com/stencil-dev/stencil/internal/testenv"
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
		testenv.Eventually(t, 3*time.Minute, tc.resource+" availableReplicas to be its Deployment's", paced(func() (bool, error) {
			dep := &appsv1.Deployment{}
			if err := k.Get(ctx, client.ObjectKey{Namespace: "default", Name: tc.name}, dep); err != nil {
				return false, err
			}
			out, errOut, err := kc.run("", "get", tc.resource, tc.name, "-o", "jsonpath={.status.availableReplicas}")
			want := fmt.Sprint(dep.Status.AvailableReplicas)
			return err == nil && dep.Status.AvailableReplicas > 0 && out == want, fmt.Errorf("kubectl: %q (%v %s), Deployment: %s", out, err, errOut, want)
		}))
	}

	phase := func(want string) {
		t.Helper()
		testenv.Eventually(t, 3*time.Minute, "the CloudManager's phase "+want, paced(func() (bool, error) {
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
		}))
	}
	// updated waits for an Updated event saying change, recorded (or
	// recorded again) at since or later: the controller records it once
	// its status write has changed the output, so one seen says that
	// write was made.
	updated := func(change string, since time.Time) {
		t.Helper()
		testenv.Eventually(t, 3*time.Minute, "an Updated event saying "+change, func() (bool, error) {
			for _, e := range updatedEvents(t, k, change) {
				if !observed(e).Before(since) {
					return true, nil
				}
			}
			return false, fmt.Errorf("no such event since %s", since.Format(time.RFC3339Nano))
		})
	}
	phase("ready")
	updated(`phase: `, time.Time{})

	// The database's one pod goes: no quorum until it runs again. The
	// nodes are cordoned first, so its replacement stays Pending until the
	// controller has seen the quorum lost, however slow this machine.
	cordon(t, k, true)
	defer cordon(t, k, false)
	// An event the controller records again is one of a series (client-go's
	// events.k8s.io recorder): its second occurrence updates the Event,
	// later ones are written only at the series' heartbeat. The phases
	// went (unset) → creating → ready once at the start: the loss and
	// the recovery are the first and the second occurrences of theirs,
	// and their events are waited for, unless the start already made a
	// series of one (a flap), whose new occurrence is not written: then
	// its phase alone says it.
	lostChange, backChange := `phase: "ready" → "creating"`, `phase: "creating" → "ready"`
	inSeries := func(change string) bool {
		for _, e := range updatedEvents(t, k, change) {
			if e.Series != nil {
				t.Logf("the start recorded %s twice already: client-go writes its next occurrence only at its series' heartbeat", change)
				return true
			}
		}
		return false
	}
	lostSeries, backSeries := inSeries(lostChange), inSeries(backChange)
	lost := time.Now()
	if err := k.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cm-db-0"}}); err != nil {
		t.Fatalf("delete the database's pod: %v", err)
	}
	// The status is written "creating" before the event is recorded: the
	// phase ready awaited below is the recovery's.
	if lostSeries {
		phase("creating")
	} else {
		updated(lostChange, lost)
	}
	cordon(t, k, false)
	phase("ready")
	if !backSeries {
		updated(backChange, lost)
	}
}

// updatedEvents are the Updated events of the CloudManager whose message
// says change.
func updatedEvents(t *testing.T, k client.Client, change string) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	if err := k.List(context.Background(), &list, client.InNamespace("default")); err != nil {
		t.Fatalf("list events: %v", err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Reason == "Updated" && e.InvolvedObject.Name == "cloudmanager-sample" && strings.Contains(e.Message, change) {
			out = append(out, e)
		}
	}
	return out
}

// observed is when e was last recorded: its series' last occurrence, or
// its own time (the controller's clock, this machine's). A time only to
// the second is rounded up, so that an event of the second a test marks
// counts as recorded since.
func observed(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Add(time.Second)
	}
	return e.CreationTimestamp.Add(time.Second)
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
