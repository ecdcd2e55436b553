package pull_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/source"
	"github.com/stencil-dev/stencil/source/sourcetest"
)

// TestBundleSourceSecrets: a Bundle cannot make the controller send a
// Secret's credentials to a host the Secret is not for, nor use a Secret
// of the controller's namespace the cluster admin did not mark for Bundle
// sources (its webhook certificate's, say): SourceReady=False, reason
// SecretRefused, naming the Secret and never a value, and the registry
// hears no credential.
func TestBundleSourceSecrets(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	reg := sourcetest.NewRegistry(t, "robot", "s3cret")
	reg.Push(t, "charts/greeter", "1.0.0", greeter(t, "1.0.0", "hello"))
	_, ca := sourceSecrets(t, "sec-"+ns, reg.Host, "x", "y", reg.CA)
	create := func(s *corev1.Secret) *corev1.LocalObjectReference {
		t.Helper()
		s.Namespace = testenv.ControllerNamespace
		env.MustCreate(t, s)
		t.Cleanup(func() { _ = env.Delete(context.Background(), s) })
		return &corev1.LocalObjectReference{Name: s.Name}
	}
	elsewhere := create(&corev1.Secret{ObjectMeta: forSources("sec-" + ns + "-elsewhere"),
		StringData: map[string]string{source.KeyUsername: "robot", source.KeyPassword: "s3cret", source.KeyHosts: "registry.example.com"}})
	unmarked := create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec-" + ns + "-webhook-cert"}, Type: corev1.SecretTypeTLS,
		StringData: map[string]string{"tls.crt": "s3cret-cert", "tls.key": "s3cret-key", "ca.crt": string(reg.CA), source.KeyUsername: "robot", source.KeyPassword: "s3cret"}})

	for _, tt := range []struct {
		name string
		src  v1alpha1.BundleSource
		want string
	}{
		{"credentials for another host", v1alpha1.BundleSource{SecretRef: elsewhere, CASecretRef: ca}, "registry.example.com"},
		{"an unmarked Secret as credentials", v1alpha1.BundleSource{SecretRef: unmarked, CASecretRef: ca}, "not labelled " + v1alpha1.LabelSecretType},
		{"an unmarked Secret as the CA", v1alpha1.BundleSource{CASecretRef: unmarked}, "not labelled " + v1alpha1.LabelSecretType},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(reg.Authorizations())
			tt.src.OCI = reg.Ref("charts/greeter", "1.0.0")
			name := strings.ToLower(strings.ReplaceAll(tt.name, " ", "-")) + "-" + ns
			sourceBundle(t, name, tt.src)
			got := bundleSource(t, name, metav1.ConditionFalse, source.ReasonSecretRefused)
			c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionSourceReady)
			if !strings.Contains(c.Message, tt.want) || strings.Contains(c.Message, "s3cret") {
				t.Errorf("SourceReady message %q; want it to say %q, and no value", c.Message, tt.want)
			}
			if got := reg.Authorizations()[before:]; len(got) != 0 {
				t.Errorf("the registry received credentials: %q", got)
			}
		})
	}
}
