package reconcile_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/shard"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
)

// lookupFiles renders what three lookups answer: a ConfigMap of the
// parent's namespace, one of namespace .Values.far, and the list of the
// namespace's ServiceAccounts.
var lookupFiles = map[string]string{
	"values.yaml": "far: default\n",
	"templates/result.yaml": `{{- $src := lookup "v1" "ConfigMap" .Release.Namespace "source" }}
{{- $far := lookup "v1" "ConfigMap" .Values.far "shared" }}
{{- $accounts := lookup "v1" "ServiceAccount" .Release.Namespace "" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: result
data:
  source: {{ dig "data" "v" "absent" $src | quote }}
  far: {{ dig "data" "v" "absent" $far | quote }}
  accounts: {{ len $accounts.items | quote }}
`,
}

// resultIs waits until ConfigMap result of ns holds want.
func resultIs(t *testing.T, ns string, want map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	eventually(t, "ConfigMap result to hold "+strings.Join(slices.Sorted(maps.Values(want)), ","), func() (bool, error) {
		if err := k.Get(context.Background(), key(ns, "result"), cm); err != nil {
			return false, err
		}
		return maps.Equal(cm.Data, want), nil
	})
}

// TestLookupAsTheAccount (issue 30): a chart's lookup answers what the
// parent's ServiceAccount may read, and only that: an object of its
// namespace, a list of a kind it may list, and, of a namespace it may not
// read (though the controller may), nothing, with a LookupDenied event.
// A change of an object looked up, or of the list, renders again with
// no change of the parent; a converged set makes no writes.
func TestLookupAsTheAccount(t *testing.T) {
	const lookups = "lookups"
	c, _ := env.StartWith(t, testenv.ControllerOptions{Shard: lookups})
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	far := testenv.Namespace(t, k)
	env.TenantAccount(t, ns)
	mustCreate(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "source"}, Data: map[string]string{"v": "one"}})
	mustCreate(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: far, Name: "shared"}, Data: map[string]string{"v": "not-the-tenants"}})
	b := bundle(t, "lookup-"+ns, lookupFiles)
	comp := composition(ns, "app", b.Name, `{"far":"`+far+`"}`)
	comp.Labels = map[string]string{shard.Label: lookups}
	testenv.WaitAdmitted(t, k, ns, comp.Labels, 0)
	mustCreate(t, comp)

	resultIs(t, ns, map[string]string{"source": "one", "far": "absent", "accounts": "1"})
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	eventually(t, "a LookupDenied event naming the far namespace", func() (bool, error) {
		for _, e := range env.Events(t, ns, "LookupDenied") {
			if strings.Contains(e.Note, "ConfigMap "+far+" shared") && strings.Contains(e.Note, "ServiceAccount "+ns+"/stencil may not get configmaps") {
				return true, nil
			}
		}
		return false, nil
	})
	lookupsRecorded(t, ns, []v1alpha1.LookupStatus{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: far, Name: "shared", Answer: v1alpha1.LookupDenied},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "source", Answer: v1alpha1.LookupFound},
		{APIVersion: "v1", Kind: "ServiceAccount", Namespace: ns, Answer: v1alpha1.LookupListed},
	}, "ServiceAccount "+ns+"/stencil may not get configmaps")

	t.Run("an object looked up changes", func(t *testing.T) {
		if err := updateFresh(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "source"}}, func() error {
			return k.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "source"}, Data: map[string]string{"v": "two"}})
		}); err != nil {
			t.Fatal(err)
		}
		resultIs(t, ns, map[string]string{"source": "two", "far": "absent", "accounts": "1"})
	})

	t.Run("a list looked up grows", func(t *testing.T) {
		mustCreate(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "another"}})
		resultIs(t, ns, map[string]string{"source": "two", "far": "absent", "accounts": "2"})
	})

	t.Run("the shared ConfigMap changing brings nothing of it", func(t *testing.T) {
		if err := updateFresh(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: far, Name: "shared"}}, func() error {
			return k.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: far, Name: "shared"}, Data: map[string]string{"v": "still-not"}})
		}); err != nil {
			t.Fatal(err)
		}
		consistently(t, "the result to hold nothing of the far namespace", 2*time.Second, func() (bool, error) {
			cm := &corev1.ConfigMap{}
			if err := k.Get(ctx, key(ns, "result"), cm); err != nil {
				return false, err
			}
			return cm.Data["far"] == "absent", nil
		})
	})

	t.Run("a lookup that finds nothing", func(t *testing.T) {
		if err := k.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "source"}}); err != nil {
			t.Fatal(err)
		}
		resultIs(t, ns, map[string]string{"source": "absent", "far": "absent", "accounts": "2"})
		lookupsRecorded(t, ns, []v1alpha1.LookupStatus{
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: far, Name: "shared", Answer: v1alpha1.LookupDenied},
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "source", Answer: v1alpha1.LookupNotFound},
			{APIVersion: "v1", Kind: "ServiceAccount", Namespace: ns, Answer: v1alpha1.LookupListed},
		}, "ServiceAccount "+ns+"/stencil may not get configmaps")
	})

	t.Run("a converged set writes nothing", func(t *testing.T) {
		env.Converged(t, c, ns, "app")
	})
}

// lookupsRecorded waits until Composition app of ns records want as its
// last render's lookups (issue 41: what `stencil trace` shows), each
// Denied one with a message holding denied.
func lookupsRecorded(t *testing.T, ns string, want []v1alpha1.LookupStatus, denied string) {
	t.Helper()
	eventually(t, "status.lookups to list the render's lookups", func() (bool, error) {
		comp := &v1alpha1.Composition{}
		if err := k.Get(context.Background(), key(ns, "app"), comp); err != nil {
			return false, err
		}
		got := slices.Clone(comp.Status.Lookups)
		for i := range got {
			if got[i].Answer == v1alpha1.LookupDenied && strings.Contains(got[i].Message, denied) {
				got[i].Message = ""
			}
		}
		// Sorted by key: the two namespaces' names decide the order.
		byKey := func(a, b v1alpha1.LookupStatus) int {
			return strings.Compare(a.Kind+" "+a.Namespace+" "+a.Name, b.Kind+" "+b.Namespace+" "+b.Name)
		}
		slices.SortFunc(got, byKey)
		want = slices.Clone(want)
		slices.SortFunc(want, byKey)
		if !slices.Equal(got, want) || comp.Status.LookupsOmitted != 0 {
			return false, fmt.Errorf("lookups %+v (omitted %d)", comp.Status.Lookups, comp.Status.LookupsOmitted)
		}
		return true, nil
	})
}

// generatingFiles renders what Helm charts generate: a password and a
// token, a CA and a certificate it signs, and a password kept the way
// Bitnami's charts keep one (looked up from the chart's own Secret, made
// only when there is none), beside a ConfigMap the values change.
var generatingFiles = map[string]string{
	"values.yaml": "replicas: 1\n",
	"templates/creds.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: {{ randAlphaNum 24 | quote }}
  token: {{ uuidv4 | quote }}
`,
	"templates/tls.yaml": `{{- $ca := genCA "test-ca" 365 }}
{{- $cert := genSignedCert "web" nil (list "web.svc") 365 $ca }}
apiVersion: v1
kind: Secret
metadata:
  name: tls
type: kubernetes.io/tls
data:
  tls.crt: {{ $cert.Cert | b64enc }}
  tls.key: {{ $cert.Key | b64enc }}
  ca.crt: {{ $ca.Cert | b64enc }}
`,
	"templates/db.yaml": `{{- $existing := lookup "v1" "Secret" .Release.Namespace "db" }}
apiVersion: v1
kind: Secret
metadata:
  name: db
data:
  {{- if $existing }}
  root-password: {{ index $existing.data "root-password" }}
  {{- else }}
  root-password: {{ randAlphaNum 16 | b64enc }}
  {{- end }}
`,
	"templates/plain.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: plain
data:
  replicas: {{ .Values.replicas | quote }}
`,
}

// secretsOf reads the data of Secrets names of ns.
func secretsOf(t *testing.T, ns string, names ...string) map[string]map[string][]byte {
	t.Helper()
	out := map[string]map[string][]byte{}
	for _, n := range names {
		s := &corev1.Secret{}
		if err := k.Get(context.Background(), key(ns, n), s); err != nil {
			t.Fatalf("Secret %s: %v", n, err)
		}
		out[n] = s.Data
	}
	return out
}

// sameSecrets reports whether a and b hold the same data.
func sameSecrets(a, b map[string]map[string][]byte) bool {
	return maps.EqualFunc(a, b, func(x, y map[string][]byte) bool { return maps.EqualFunc(x, y, bytes.Equal) })
}

// TestGeneratedValuesAreKept (issue 30): what a chart generates (random
// passwords, UUIDs, a CA and a certificate, a password kept through a
// lookup of the chart's own Secret) is made once: a values change, a
// restart of the controller and a deleted member leave the same values;
// they are kept in the set's own Secret, a member (written as the
// parent's ServiceAccount), deleted with the set; a converged set makes
// no writes.
func TestGeneratedValuesAreKept(t *testing.T) {
	const shardName = "generated"
	opts := testenv.ControllerOptions{Shard: shardName}
	c, stop := env.StartWith(t, opts)
	outer := t
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	env.TenantAccount(t, ns)
	b := bundle(t, "generated-"+ns, generatingFiles)
	comp := composition(ns, "app", b.Name, `{"replicas":1}`)
	comp.Labels = map[string]string{shard.Label: shardName}
	testenv.WaitAdmitted(t, k, ns, comp.Labels, 0)
	mustCreate(t, comp)
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	names := []string{"creds", "tls", "db"}
	first := secretsOf(t, ns, names...)
	for _, n := range names {
		for field, v := range first[n] {
			if len(v) == 0 {
				t.Errorf("Secret %s: %s is empty", n, field)
			}
		}
	}

	id := applyset.ID("app", ns, applyset.CompositionGroupKind)
	store := &corev1.Secret{}
	if err := k.Get(ctx, key(ns, valuestore.Name(id)), store); err != nil {
		t.Fatalf("the store of generated values: %v", err)
	}
	if store.Labels[applyset.LabelPartOf] != id || store.Annotations[valuestore.AnnotationStore] != "true" {
		t.Errorf("the store's labels %v and annotations %v: want part-of %s and %s", store.Labels, store.Annotations, id, valuestore.AnnotationStore)
	}
	for k := range store.Data {
		if strings.Contains(k, "password") || strings.Contains(k, "creds") {
			t.Errorf("the store's key %q names what it keeps: keys are digests", k)
		}
	}
	managedBy := ""
	for _, mf := range store.ManagedFields {
		if mf.Manager == applyset.FieldManager {
			managedBy = mf.Manager
		}
	}
	if managedBy == "" {
		t.Errorf("the store is not applied by %s: %+v", applyset.FieldManager, store.ManagedFields)
	}
	parent := &v1alpha1.Composition{}
	if err := k.Get(ctx, key(ns, "app"), parent); err != nil {
		t.Fatal(err)
	}
	for _, m := range parent.Status.Members {
		if m.Name == valuestore.Name(id) {
			t.Errorf("the store is listed in the parent's status: %+v", m)
		}
	}

	t.Run("a converged set writes nothing", func(t *testing.T) {
		env.Converged(t, c, ns, "app")
		if !sameSecrets(first, secretsOf(t, ns, names...)) {
			t.Errorf("the generated values changed with nothing changed")
		}
	})

	t.Run("a values change keeps them", func(t *testing.T) {
		update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"replicas":3}`) })
		eventually(t, "ConfigMap plain to follow the values", func() (bool, error) {
			cm := &corev1.ConfigMap{}
			err := k.Get(ctx, key(ns, "plain"), cm)
			return err == nil && cm.Data["replicas"] == "3", nil
		})
		condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
		if !sameSecrets(first, secretsOf(t, ns, names...)) {
			t.Errorf("a values change generated new values")
		}
	})

	t.Run("a deleted member comes back with its values", func(t *testing.T) {
		if err := k.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "Secret creds to come back", func() (bool, error) {
			s := &corev1.Secret{}
			err := k.Get(ctx, key(ns, "creds"), s)
			return err == nil && s.DeletionTimestamp == nil, nil
		})
		if !sameSecrets(first, secretsOf(t, ns, names...)) {
			t.Errorf("a member deleted came back with new values")
		}
	})

	t.Run("a restart keeps them", func(t *testing.T) {
		stop()
		c, _ = env.StartWith(outer, opts) // running until the test ends
		update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"replicas":4}`) })
		eventually(t, "ConfigMap plain to follow the values", func() (bool, error) {
			cm := &corev1.ConfigMap{}
			err := k.Get(ctx, key(ns, "plain"), cm)
			return err == nil && cm.Data["replicas"] == "4", nil
		})
		env.Converged(t, c, ns, "app")
		if !sameSecrets(first, secretsOf(t, ns, names...)) {
			t.Errorf("a restart generated new values")
		}
	})

	t.Run("deleting the set deletes the store", func(t *testing.T) {
		if err := k.Delete(ctx, comp); err != nil {
			t.Fatal(err)
		}
		gone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}})
		gone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valuestore.Name(id)}})
	})
}

// TestLookupThatNeverSettles (issue 30 item 1): a chart that looks up the
// object it renders and writes a new value into it each time (a counter)
// would rewrite it on every pass; stencil renders again while the answer
// moves and, after MaxObservedPasses passes in a row, stalls it with
// reason Flapping, naming the lookup (or, should a pass have found the
// answer not yet in the lookup informer, which restarts the count, the
// counter the flapping rule saw written five times), and writes no more.
func TestLookupThatNeverSettles(t *testing.T) {
	ns := testenv.Namespace(t, k)
	b := bundle(t, "counter-"+ns, map[string]string{
		"templates/counter.yaml": `{{- $me := lookup "v1" "ConfigMap" .Release.Namespace "counter" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: counter
data:
  count: {{ dig "data" "count" "0" $me | atoi | add1 | quote }}
`,
	})
	mustCreate(t, composition(ns, "counter", b.Name, ""))
	compositionWith(t, ns, "counter", testenv.Condition{Type: v1alpha1.ConditionStalled, Reasons: []string{v1alpha1.ReasonFlapping},
		Message: func(m string) bool {
			return strings.Contains(m, "lookup v1 ConfigMap "+ns+" counter") || strings.Contains(m, "ConfigMap/"+ns+"/counter was written")
		}})
	cm := &corev1.ConfigMap{}
	if err := k.Get(context.Background(), key(ns, "counter"), cm); err != nil {
		t.Fatal(err)
	}
	n := cm.Data["count"]
	if n == "1" {
		t.Errorf("the counter stalled at 1: it was never rendered again with its own answer")
	}
	consistently(t, "the counter to stay at "+n, 2*time.Second, func() (bool, error) {
		err := k.Get(context.Background(), key(ns, "counter"), cm)
		return err == nil && cm.Data["count"] == n, err
	})
}

// TestRenderThatRequiresALookup (issue 30 item 1): a chart that requires
// what it looks up (required of a lookup's field) renders once the object
// exists: the render that failed for want of the answer is rendered again
// with it, in the same pass; when the object goes, the parent stalls
// RenderFailed naming the template, and when it comes back, the parent
// recovers with no change of its own (the remembered failure is tied to
// the answers it got).
func TestRenderThatRequiresALookup(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	mustCreate(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "needed"}, Data: map[string]string{"v": "here"}})
	b := bundle(t, "requires-"+ns, map[string]string{
		"templates/result.yaml": `{{- $s := lookup "v1" "ConfigMap" .Release.Namespace "needed" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: result
data:
  v: {{ required "ConfigMap needed is required" (dig "data" "v" "" $s) | quote }}
`,
	})
	mustCreate(t, composition(ns, "app", b.Name, ""))
	resultIs(t, ns, map[string]string{"v": "here"})
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)

	if err := k.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "needed"}}); err != nil {
		t.Fatal(err)
	}
	compositionWith(t, ns, "app", testenv.Condition{Type: v1alpha1.ConditionStalled, Reasons: []string{v1alpha1.ReasonRenderFailed},
		Message: testenv.Says("templates/result.yaml:7", "ConfigMap needed is required")})
	mustCreate(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "needed"}, Data: map[string]string{"v": "again"}})
	resultIs(t, ns, map[string]string{"v": "again"})
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
}
