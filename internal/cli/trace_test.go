package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli"
	"github.com/stencil-dev/stencil/internal/testenv"
)

// revisionHash is the content hash of a Bundle revision's name.
var revisionHash = regexp.MustCompile(`-[0-9a-f]{10}\b`)

// traced makes Composition web of the appServiceBundle in a new
// namespace, waits until the controller applied its two members and the
// Bundle's rollout counts it, and returns the namespace and the time the
// trace's ages are counted to: ten hours after the newest member was
// made, so that every age reads 10h.
func traced(t *testing.T) (string, string) {
	t.Helper()
	ctx := context.Background()
	k := controller.Client
	ns := testenv.Namespace(t, k)
	bundle := "trace-" + ns
	kubectl(t, fmt.Sprintf(appServiceBundle, bundle), "apply", "-f", "-")
	kubectl(t, compositionYAML(ns, "web", bundle, `{"replicas": 2}`), "apply", "-f", "-")
	web := composition(ns, "web")
	applied(t, k, web, 2)
	eventually(t, "the Bundle's rollout to count the Composition", func() (bool, error) {
		b := &v1alpha1.Bundle{}
		if err := k.Get(ctx, client.ObjectKey{Name: bundle}, b); err != nil {
			return false, err
		}
		for _, r := range b.Status.Rollouts {
			if r.Parents == 1 && r.Updated == 1 {
				return true, nil
			}
		}
		return false, fmt.Errorf("rollouts %+v", b.Status.Rollouts)
	})
	newest := web.GetCreationTimestamp().Time
	for _, obj := range []client.Object{&corev1.Service{}, &appsv1.Deployment{}} {
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, obj); err != nil {
			t.Fatal(err)
		}
		if c := obj.GetCreationTimestamp(); c.After(newest) {
			newest = c.Time
		}
	}
	return ns, newest.Add(10 * time.Hour).UTC().Format(time.RFC3339)
}

// golden compares out, with the namespace and revision hashes masked,
// with testdata/NAME (rewritten with -update).
func golden(t *testing.T, name, ns, out string) {
	t.Helper()
	out = revisionHash.ReplaceAllString(strings.ReplaceAll(out, ns, "NS"), "-HASH")
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/cli -run TestTrace -update writes it)", err)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

// TestTrace: stencil trace shows a Composition's members as a tree with
// their readiness, reason and age, and what the Composition is in (its
// Bundle's revision and rollout) and waits on; -o wide adds the API
// version and the whole reason; -o json is the same trace as data; a
// member the caller may not read is shown as Forbidden, not an error.
func TestTrace(t *testing.T) {
	ns, now := traced(t)
	for _, tc := range []struct{ golden, output string }{
		{"trace-composition.golden.txt", ""},
		{"trace-composition-wide.golden.txt", "wide"},
	} {
		args := []string{"trace", "composition/web", "-n", ns, "--now", now}
		if tc.output != "" {
			args = append(args, "-o", tc.output)
		}
		out, errOut, code := stencil(t, "", args...)
		if code != 0 {
			t.Fatalf("trace: exit %d: %s", code, errOut)
		}
		golden(t, tc.golden, ns, out)
	}

	// KIND NAME, as kubectl takes it, and -o json.
	out, errOut, code := stencil(t, "", "trace", "compositions.stencil.dev", "web", "-n", ns, "-o", "json")
	if code != 0 {
		t.Fatalf("trace -o json: exit %d: %s", code, errOut)
	}
	var got struct {
		Parent struct {
			Kind     string
			Children []struct{ Kind, Name, Ready, Status string }
		}
		BundleRevision string
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("trace -o json: %v\n%s", err, out)
	}
	if got.Parent.Kind != "Composition" || len(got.Parent.Children) != 2 || got.BundleRevision == "" {
		t.Errorf("trace -o json = %+v, want the Composition with its 2 members and its revision", got)
	}

	// A user who may read the Composition and its Deployment, not its
	// Service.
	grant(t, ns, "tracer", rbacv1.PolicyRule{APIGroups: []string{"stencil.dev"}, Resources: []string{"compositions"}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}})
	out, errOut, code = stencil(t, "", "trace", "composition/web", "-n", ns, "--now", now, "--as", "tracer")
	if code != 0 {
		t.Fatalf("trace as a user who may not get the Service: exit %d: %s", code, errOut)
	}
	golden(t, "trace-composition-forbidden.golden.txt", ns, out)
}

// grant binds user to a Role of ns with rules.
func grant(t *testing.T, ns, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	k := controller.Client
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user}, Rules: rules}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	for _, obj := range []client.Object{role, binding} {
		if err := k.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	testenv.WaitGranted(t, k, testenv.Subject{User: user}, ns, 0, rules...)
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestTraceWatch: with --watch, trace prints again when a member changes
// (here the Deployment becomes available): the new state is printed.
func TestTraceWatch(t *testing.T) {
	ns, _ := traced(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		cmd := cli.NewRootCommand("v0.0.0-test", strings.NewReader(""))
		cmd.SetArgs([]string{"trace", "composition/web", "-n", ns, "--watch", "--kubeconfig", kubeconfig})
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		done <- cmd.ExecuteContext(ctx)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("trace --watch: %v", err)
		}
	}()
	eventually(t, "the first trace", func() (bool, error) {
		return strings.Contains(out.String(), "Deployment/web"), fmt.Errorf("output:\n%s", out.String())
	})
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	testenv.UpdateStatus(t, controller.Client, dep, func() {
		r := *dep.Spec.Replicas
		dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: r, UpdatedReplicas: r, ReadyReplicas: r, AvailableReplicas: r,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			}}
	})
	eventually(t, "a trace showing the Deployment Current", func() (bool, error) {
		s := out.String()
		blocks := strings.Split(s, "\n\nNAME")
		last := blocks[len(blocks)-1]
		return len(blocks) > 1 && regexp.MustCompile(`Deployment/web\s+True\s+Current`).MatchString(last), fmt.Errorf("output:\n%s", s)
	})
}
