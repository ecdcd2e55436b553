package valuestore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/shard"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
	"github.com/stencil-dev/stencil/templates/generators"
)

// accountIn lets ServiceAccount stencil of tenant write ConfigMaps and
// Secrets in namespace ns too (what a Bundle granted ns needs).
func accountIn(t *testing.T, ns, tenant string) {
	t.Helper()
	env.MustCreate(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stencil-" + tenant},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}})
	env.MustCreate(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stencil-" + tenant},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "stencil-" + tenant},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: tenant, Name: "stencil"}}})
}

// secretData reads field of Secret ns/name.
func secretData(t *testing.T, ns, name, field string) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Get(context.Background(), suite.Key(ns, name), s); err != nil {
		t.Fatalf("Secret %s/%s: %v", ns, name, err)
	}
	if len(s.Data[field]) == 0 {
		t.Fatalf("Secret %s/%s holds no %s", ns, name, field)
	}
	return string(s.Data[field])
}

// noSecretHolds fails when a Secret that c lists in ns holds value, as
// it is or in its JSON form (how stores keep it).
func noSecretHolds(t *testing.T, c client.Client, ns, value, what string) {
	t.Helper()
	var list corev1.SecretList
	if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list the Secrets of %s: %v", ns, err)
	}
	for _, s := range list.Items {
		for field, v := range s.Data {
			if bytes.Contains(v, []byte(value)) {
				t.Errorf("Secret %s/%s (%s) holds %s, which only other namespaces' objects hold", ns, s.Name, field, what)
			}
		}
	}
}

// storeOf reads the store of set id in ns (name: valuestore.Name, or
// valuestore.ControllerName in the controller's namespace), nil when there
// is none.
func storeOf(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	err := env.Get(context.Background(), suite.Key(ns, name), s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("store %s/%s: %v", ns, name, err)
	}
	return s
}

// holds reports whether store keeps value (a string value, as kept: its
// JSON), under a keyed digest.
func holds(store *corev1.Secret, value string) bool {
	if store == nil {
		return false
	}
	want, _ := json.Marshal(value)
	for k, v := range store.Data {
		if bytes.Equal(v, want) && len(k) == 64 && !generators.IsLegacyKey(k) {
			return true
		}
	}
	return false
}

// TestGeneratedValueStaysInItsNamespace (issue 37 item 2): a Bundle
// granted namespace platform renders there a Secret with a generated
// password. The password is kept in a store of platform, written as the
// parent's ServiceAccount, and in no Secret of the parent's namespace: a
// user who may read Secrets only there reads it nowhere, nor the store
// of platform. The password is the same after passes, a values change
// and a restart; a store written with another key stalls the set
// (GeneratedKeyLost) with no value made anew, until it is as written.
func TestGeneratedValueStaysInItsNamespace(t *testing.T) {
	const shardName = "generated-placed"
	opts := testenv.ControllerOptions{Shard: shardName}
	c, stop := env.StartWith(t, opts)
	outer := t
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client)
	platform := testenv.Namespace(t, env.Client)
	env.TenantAccount(t, ns)
	accountIn(t, platform, ns)
	b := env.Bundle(t, "placed-"+ns, map[string]string{
		"templates/db.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: db-admin
  namespace: {{ .Values.platform }}
stringData:
  password: {{ randAlphaNum 32 | quote }}
`,
		"templates/app.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  replicas: {{ .Values.replicas | quote }}
`,
	}, func(s *v1alpha1.BundleSpec) { s.Permissions.Namespaces = []string{platform} })
	comp := suite.Composition(ns, "app", b.Name, fmt.Sprintf(`{"platform":%q,"replicas":1}`, platform))
	comp.Labels = map[string]string{shard.Label: shardName}
	testenv.WaitAdmitted(t, env.Client, ns, comp.Labels, 0)
	env.MustCreate(t, comp)
	env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	password := secretData(t, platform, "db-admin", "password")
	id := applyset.ID("app", ns, applyset.CompositionGroupKind)

	noSecretHolds(t, env.Client, ns, password, "the platform's password")
	store := storeOf(t, platform, valuestore.Name(id))
	if !holds(store, password) {
		t.Fatalf("the store of platform does not keep the password under a keyed digest: %v", store)
	}
	if store.Labels[applyset.LabelPartOf] != id || store.Annotations[valuestore.AnnotationKey] == "" {
		t.Errorf("the store of platform: labels %v, annotations %v; want part-of %s and the key's ID", store.Labels, store.Annotations, id)
	}
	if s := storeOf(t, testenv.ControllerNamespace, valuestore.ControllerName(id)); s != nil {
		t.Errorf("the controller keeps a store of a set whose values all end up in namespaces: %v", slices.Collect(maps.Keys(s.Data)))
	}

	t.Run("a reader of the tenant's Secrets reads it nowhere", func(t *testing.T) {
		user := "secrets-reader-" + ns
		env.Grant(t, ns, "secrets-reader", user, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}})
		reader := env.AsUser(t, user)
		noSecretHolds(t, reader, ns, password, "the platform's password")
		err := reader.Get(ctx, suite.Key(platform, valuestore.Name(id)), &corev1.Secret{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("the reader of %s's Secrets reads the store of platform: %v", ns, err)
		}
	})

	t.Run("a converged set writes nothing", func(t *testing.T) {
		env.Converged(t, c, ns, "app")
		if got := secretData(t, platform, "db-admin", "password"); got != password {
			t.Errorf("the password changed with nothing changed")
		}
	})

	t.Run("a values change and a restart keep it", func(t *testing.T) {
		env.UpdateComposition(t, comp, func(c *v1alpha1.Composition) {
			c.Spec.Values.Raw = fmt.Appendf(nil, `{"platform":%q,"replicas":2}`, platform)
		})
		appIs(t, ns, "2")
		stop()
		c, _ = env.StartWith(outer, opts)
		env.UpdateComposition(t, comp, func(c *v1alpha1.Composition) {
			c.Spec.Values.Raw = fmt.Appendf(nil, `{"platform":%q,"replicas":3}`, platform)
		})
		appIs(t, ns, "3")
		env.Converged(t, c, ns, "app")
		if got := secretData(t, platform, "db-admin", "password"); got != password {
			t.Errorf("the password changed with a values change or a restart")
		}
		noSecretHolds(t, env.Client, ns, password, "the platform's password")
	})

	t.Run("a store written with another key stalls the set, nothing made anew", func(t *testing.T) {
		name := valuestore.Name(id)
		good := storeOf(t, platform, name).Annotations[valuestore.AnnotationKey]
		annotate := func(v string) {
			env.MergePatch(t, secretObject(platform, name), fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, valuestore.AnnotationKey, v), applyset.FieldManager)
		}
		annotate("0000000000000000")
		env.Stalled(t, ns, "app", v1alpha1.ReasonGeneratedKeyLost, platform+"/"+name, "0000000000000000", valuestore.KeySecretName)
		if got := secretData(t, platform, "db-admin", "password"); got != password {
			t.Errorf("the password was made anew under another key")
		}
		annotate(good)
		env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
		if got := secretData(t, platform, "db-admin", "password"); got != password {
			t.Errorf("the password changed once the store was as written")
		}
	})
}

// appIs waits until ConfigMap app of ns holds replicas.
func appIs(t *testing.T, ns, replicas string) {
	t.Helper()
	testenv.Eventually(t, 0, "ConfigMap app to hold replicas "+replicas, func() (bool, error) {
		cm := &corev1.ConfigMap{}
		err := env.Get(context.Background(), suite.Key(ns, "app"), cm)
		return err == nil && cm.Data["replicas"] == replicas, nil
	})
}

// secretObject names Secret ns/name.
func secretObject(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(valuestore.SecretGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// controllerCA reads, from the controller's store of set id, the CA
// whose certificate is caCert.
func controllerCA(t *testing.T, id, caCert string) (certificate, bool) {
	t.Helper()
	store := storeOf(t, testenv.ControllerNamespace, valuestore.ControllerName(id))
	if store == nil {
		return certificate{}, false
	}
	for _, v := range store.Data {
		var c certificate
		if json.Unmarshal(v, &c) == nil && c.Cert == caCert && c.Key != "" {
			return c, true
		}
	}
	return certificate{}, false
}

// webhookWriter lets ServiceAccount stencil of ns write
// ValidatingWebhookConfiguration hook, until the test ends.
func webhookWriter(t *testing.T, ns, hook string) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: hook},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: hook},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: hook},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "stencil"}}}
	env.MustCreate(t, role)
	env.MustCreate(t, binding)
	t.Cleanup(func() { _ = env.Delete(context.Background(), binding); _ = env.Delete(context.Background(), role) })
}

// caBundle is the CA certificate (PEM) in the caBundle of the first
// webhook of ValidatingWebhookConfiguration hook.
func caBundle(t *testing.T, hook string) string {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("admissionregistration.k8s.io/v1")
	u.SetKind("ValidatingWebhookConfiguration")
	if err := env.Get(context.Background(), client.ObjectKey{Name: hook}, u); err != nil {
		t.Fatalf("the webhook configuration: %v", err)
	}
	hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	b, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "caBundle")
	raw, err := base64.StdEncoding.DecodeString(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestGeneratedCAKeptByTheController (issue 37 item 2): a CA made with
// genCA ends up only as its certificate, in a webhook configuration's
// caBundle (cluster-scoped) and a tenant's ConfigMap: its key is kept in
// the controller's namespace (written as the controller) and in no
// Secret of the tenant's namespace, while the certificate it signed,
// whose key and certificate are both in the tenant's Secret, is kept in
// the tenant's store. The caBundle is the same after a restart; the
// controller's store is deleted with the set.
func TestGeneratedCAKeptByTheController(t *testing.T) {
	const shardName = "generated-ca"
	opts := testenv.ControllerOptions{Shard: shardName}
	_, stop := env.StartWith(t, opts)
	outer := t
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client)
	env.TenantAccount(t, ns)
	hook := "stencil-test-" + ns
	webhookWriter(t, ns, hook)
	b := env.Bundle(t, "ca-"+ns, map[string]string{
		"templates/webhook.yaml": `{{- $ca := genCA "webhook-ca" 365 }}
{{- $cert := genSignedCert "webhook" nil (list "webhook.svc") 365 $ca }}
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: {{ .Values.hook }}
webhooks:
- name: check.{{ .Values.hook }}.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  clientConfig:
    url: https://127.0.0.1:1/never
    caBundle: {{ $ca.Cert | b64enc }}
  rules:
  - apiGroups: [nothing.example.com]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [nothings]
---
apiVersion: v1
kind: Secret
metadata:
  name: webhook-tls
type: kubernetes.io/tls
data:
  tls.crt: {{ $cert.Cert | b64enc }}
  tls.key: {{ $cert.Key | b64enc }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ca
data:
  ca.crt: {{ $ca.Cert | quote }}
`,
	}, func(s *v1alpha1.BundleSpec) {
		s.Permissions.ClusterScoped = []v1alpha1.GroupKind{{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}}
	})
	comp := suite.Composition(ns, "app", b.Name, fmt.Sprintf(`{"hook":%q}`, hook))
	comp.Labels = map[string]string{shard.Label: shardName}
	testenv.WaitAdmitted(t, env.Client, ns, comp.Labels, 0)
	env.MustCreate(t, comp)
	env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	id := applyset.ID("app", ns, applyset.CompositionGroupKind)

	caCert := caBundle(t, hook)
	ca, ok := controllerCA(t, id, caCert)
	if !ok {
		t.Fatalf("the controller's store %s/%s does not keep the CA", testenv.ControllerNamespace, valuestore.ControllerName(id))
	}
	keyLine := strings.Split(ca.Key, "\n")[1]
	noSecretHolds(t, env.Client, ns, keyLine, "the CA's key")
	noSecretHolds(t, env.Client, ns, base64.StdEncoding.EncodeToString([]byte(ca.Key)), "the CA's key in base64")
	controllerStore := storeOf(t, testenv.ControllerNamespace, valuestore.ControllerName(id))
	if controllerStore.Labels[applyset.LabelPartOf] != id || !valuestore.IsStore(controllerStore) {
		t.Errorf("the controller's store: labels %v, annotations %v", controllerStore.Labels, controllerStore.Annotations)
	}
	tenantStore := storeOf(t, ns, valuestore.Name(id))
	leafKey := secretData(t, ns, "webhook-tls", "tls.key")
	found := false
	for _, v := range tenantStore.Data {
		found = found || bytes.Contains(v, []byte(strings.Split(leafKey, "\n")[1]))
	}
	if !found {
		t.Errorf("the tenant's store does not keep the certificate whose key and certificate are in its Secret")
	}

	t.Run("a restart keeps the caBundle", func(t *testing.T) {
		stop()
		c, _ := env.StartWith(outer, opts)
		c.PassAfter(t, ns, "app", func() error {
			return env.TouchLabel(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ca"}})
		})
		env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
		if caBundle(t, hook) != caCert {
			t.Errorf("a restart made a new CA")
		}
	})

	t.Run("deleting the set deletes the controller's store", func(t *testing.T) {
		if err := env.Delete(ctx, comp); err != nil {
			t.Fatal(err)
		}
		env.Gone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.ControllerNamespace, Name: valuestore.ControllerName(id)}})
		env.Gone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valuestore.Name(id)}})
	})
}

// argsDigest is the digest templates/generators takes of a call's
// arguments.
func argsDigest(t *testing.T, args ...any) string {
	t.Helper()
	if args == nil {
		args = []any{}
	}
	data, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// legacyValues are the values of the legacy test's set as stencil kept
// them before, each under the bare SHA-256 of its call (what
// generators.LegacyKey makes), in their JSON form: the password, the
// token, the CA, and a value no call makes any more, whose key is unused.
func legacyValues(t *testing.T, password, token string, ca certificate) (legacy map[string]string, unused string) {
	t.Helper()
	quote := func(v any) string { data, _ := json.Marshal(v); return string(data) }
	unused = generators.LegacyKey("templates/gone.yaml", "randAlphaNum", argsDigest(t, 20), 0)
	legacy = map[string]string{
		generators.LegacyKey("templates/db.yaml", "randAlphaNum", argsDigest(t, 32), 0):        quote(password),
		generators.LegacyKey("templates/app.yaml", "uuidv4", argsDigest(t), 0):                 quote(token),
		generators.LegacyKey("templates/ca.yaml", "genCA", argsDigest(t, "legacy-ca", 365), 0): quote(ca),
		unused: quote("a-value-no-call-makes-any-more"),
	}
	return legacy, unused
}

// writeLegacyStore makes the stores of set id as stencil wrote them
// before: one, in the parent's namespace ns, holding legacy (keyed by
// bare digests, no key recorded; the same object, rewritten, so it is
// the member stencil applied), and none in platform nor in the
// controller's namespace.
func writeLegacyStore(t *testing.T, ns, platform, id string, legacy map[string]string) {
	t.Helper()
	ctx := context.Background()
	data := map[string]any{}
	for k, v := range legacy {
		data[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	old := secretObject(ns, valuestore.Name(id))
	old.Object["type"], old.Object["data"] = "Opaque", data
	old.SetLabels(map[string]string{applyset.LabelPartOf: id})
	old.SetAnnotations(map[string]string{valuestore.AnnotationStore: "true"})
	if err := env.Apply(ctx, client.ApplyConfigurationFromUnstructured(old), client.FieldOwner(applyset.FieldManager), client.ForceOwnership); err != nil {
		t.Fatalf("write the legacy store: %v", err)
	}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: valuestore.Name(id)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.ControllerNamespace, Name: valuestore.ControllerName(id)}},
	} {
		if err := env.Delete(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if s := storeOf(t, ns, valuestore.Name(id)); len(s.Data) != len(legacy) || s.Annotations[valuestore.AnnotationKey] != "" {
		t.Fatalf("the legacy store holds %d values, annotations %v; want the %d legacy ones and no key", len(s.Data), s.Annotations, len(legacy))
	}
}

// noLegacyKeysBut fails for each legacy key the stores keep other than
// unused: every value a call moved is under its keyed digest.
func noLegacyKeysBut(t *testing.T, unused string, stores ...*corev1.Secret) {
	t.Helper()
	for _, s := range stores {
		for k := range s.Data {
			if generators.IsLegacyKey(k) && k != unused {
				t.Errorf("store %s/%s keeps the legacy key %s of a value a call moved", s.Namespace, s.Name, k)
			}
		}
	}
}

// TestGeneratedValuesMoveFromALegacyStore (issue 37 item 2): a set whose
// store is as stencil wrote it before (in the parent's namespace, every
// value under the bare SHA-256 of its call, no key recorded) keeps every
// value: the password of a Secret of platform moves to the store of
// platform and out of the parent's namespace, the token of the tenant's
// Secret stays in the tenant's store, a CA whose key no object holds and
// a value no call makes any more move to the controller's store; every
// moved value is under its keyed digest (the unused one keeps its legacy
// key until a call moves it), and none is made anew.
func TestGeneratedValuesMoveFromALegacyStore(t *testing.T) {
	const shardName = "generated-legacy"
	opts := testenv.ControllerOptions{Shard: shardName}
	_, stop := env.StartWith(t, opts)
	outer := t
	ns := testenv.Namespace(t, env.Client)
	platform := testenv.Namespace(t, env.Client)
	env.TenantAccount(t, ns)
	accountIn(t, platform, ns)
	b := env.Bundle(t, "legacy-"+ns, map[string]string{
		"templates/db.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: db-admin
  namespace: {{ .Values.platform }}
data:
  password: {{ randAlphaNum 32 | b64enc }}
`,
		"templates/app.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: app
  namespace: {{ .Values.appNamespace | default .Release.Namespace }}
stringData:
  token: {{ uuidv4 | quote }}
`,
		"templates/ca.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: ca
data:
  ca.crt: {{ (genCA "legacy-ca" 365).Cert | quote }}
`,
	}, func(s *v1alpha1.BundleSpec) { s.Permissions.Namespaces = []string{platform} })
	comp := suite.Composition(ns, "app", b.Name, fmt.Sprintf(`{"platform":%q}`, platform))
	comp.Labels = map[string]string{shard.Label: shardName}
	testenv.WaitAdmitted(t, env.Client, ns, comp.Labels, 0)
	env.MustCreate(t, comp)
	env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	id := applyset.ID("app", ns, applyset.CompositionGroupKind)
	password := secretData(t, platform, "db-admin", "password")
	token := secretData(t, ns, "app", "token")
	cm := &corev1.ConfigMap{}
	if err := env.Get(context.Background(), suite.Key(ns, "ca"), cm); err != nil {
		t.Fatal(err)
	}
	ca, ok := controllerCA(t, id, cm.Data["ca.crt"])
	if !ok {
		t.Fatalf("the controller's store does not keep the CA")
	}

	// The stores as stencil wrote them before: one, in the parent's
	// namespace, keyed by bare digests (the same object, rewritten, so it
	// is the member stencil applied), and none elsewhere.
	stop()
	legacy, unused := legacyValues(t, password, token, ca)
	writeLegacyStore(t, ns, platform, id, legacy)

	c, _ := env.StartWith(outer, opts)
	testenv.Eventually(t, 0, "the store of platform to keep the password", func() (bool, error) {
		return holds(storeOf(t, platform, valuestore.Name(id)), password), nil
	})
	env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	c.Settle(t, ns)

	if got := secretData(t, platform, "db-admin", "password"); got != password {
		t.Errorf("the password was made anew")
	}
	if got := secretData(t, ns, "app", "token"); got != token {
		t.Errorf("the token was made anew")
	}
	if err := env.Get(context.Background(), suite.Key(ns, "ca"), cm); err != nil || cm.Data["ca.crt"] != ca.Cert {
		t.Errorf("the CA was made anew: %v", err)
	}
	noSecretHolds(t, env.Client, ns, password, "the platform's password")
	tenant := storeOf(t, ns, valuestore.Name(id))
	if !holds(tenant, token) || len(tenant.Data) != 1 {
		t.Errorf("the tenant's store keeps %v; want the token alone, under its keyed digest", slices.Sorted(maps.Keys(tenant.Data)))
	}
	if _, ok := controllerCA(t, id, ca.Cert); !ok {
		t.Errorf("the CA is not in the controller's store")
	}
	ctl := storeOf(t, testenv.ControllerNamespace, valuestore.ControllerName(id))
	if ctl == nil || string(ctl.Data[unused]) != legacy[unused] {
		t.Errorf("the value no call makes is not kept by the controller under its legacy key")
	}
	noLegacyKeysBut(t, unused, storeOf(t, platform, valuestore.Name(id)), tenant, ctl)

	t.Run("a value whose object moves leaves the store it no longer belongs in", func(t *testing.T) {
		env.UpdateComposition(t, comp, func(c *v1alpha1.Composition) {
			c.Spec.Values.Raw = fmt.Appendf(nil, `{"platform":%q,"appNamespace":%q}`, platform, platform)
		})
		env.Gone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}})
		env.Gone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valuestore.Name(id)}})
		env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
		if got := secretData(t, platform, "app", "token"); got != token {
			t.Errorf("the token was made anew when its Secret moved")
		}
		if s := storeOf(t, platform, valuestore.Name(id)); !holds(s, token) || !holds(s, password) {
			t.Errorf("the store of platform does not keep the token and the password")
		}
		noSecretHolds(t, env.Client, ns, token, "the token that moved to platform")
	})
}

// TestGeneratingSetPrunes: a set whose templates generate values prunes
// what it no longer renders (the stores, applied before the objects,
// once made the prune gate find the render not applied in full).
func TestGeneratingSetPrunes(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "generating-prune-"+ns, map[string]string{
		"templates/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: {{ randAlphaNum 24 | quote }}
`,
		"templates/extra.yaml": `{{- if .Values.extra }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: extra
data: {a: b}
{{- end }}
`,
	})
	comp := suite.Composition(ns, "app", b.Name, `{"extra":true}`)
	env.MustCreate(t, comp)
	env.Exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "extra"}})
	env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	env.UpdateComposition(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"extra":false}`) })
	env.Gone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "extra"}})
	if s := storeOf(t, ns, valuestore.Name(applyset.ID("app", ns, applyset.CompositionGroupKind))); s == nil || len(s.Data) != 1 {
		t.Errorf("the store: %v, want it keeping the password", s)
	}
}
