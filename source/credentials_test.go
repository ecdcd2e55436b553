package source_test

import (
	"encoding/base64"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/source"
	"github.com/stencil-dev/stencil/source/sourcetest"
)

func secret(name string, typ corev1.SecretType, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: typ, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// TestSourceCredentialsFromSecrets: a Secret without the keys it needs
// is an error naming the Secret and the keys, never a value.
func TestSourceCredentialsFromSecrets(t *testing.T) {
	for _, tt := range []struct {
		name     string
		auth, ca *corev1.Secret
		want     string
	}{
		{"no password", secret("creds", "", map[string]string{"username": "hunter2-user"}), nil, "Secret creds needs the keys username and password"},
		{"empty dockerconfigjson", secret("pull", corev1.SecretTypeDockerConfigJson, nil), nil, "Secret pull has no key .dockerconfigjson"},
		{"no ca.crt", nil, secret("ca", "", map[string]string{"tls.crt": "x"}), "Secret ca has no key ca.crt"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := source.CredentialsFromSecrets(tt.auth, tt.ca)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("err = %v; want %q, without a value", err, tt.want)
			}
		})
	}
}

// TestSourceDockerConfigAuth: a dockerconfigjson's base64 auth entry for
// the registry's host authenticates the pull.
func TestSourceDockerConfigAuth(t *testing.T) {
	reg := sourcetest.NewRegistry(t, "robot", "s3cret")
	reg.Push(t, "charts/podinfo", "1.0.0", sourcetest.Chart(t, "podinfo", "1.0.0", podinfo))
	auth := base64.StdEncoding.EncodeToString([]byte("robot:s3cret"))
	creds, err := source.CredentialsFromSecrets(
		secret("pull", corev1.SecretTypeDockerConfigJson, map[string]string{".dockerconfigjson": `{"auths":{"https://` + reg.Host + `":{"auth":"` + auth + `"}}}`}),
		secret("ca", "", map[string]string{"ca.crt": string(reg.CA)}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: reg.Ref("charts/podinfo", "1.0.0")}, creds, loopback); err != nil {
		t.Fatal(err)
	}
}
