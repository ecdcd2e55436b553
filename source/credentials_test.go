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

// TestSourceCredentialsBoundToHost: a Secret's credentials go only to the
// hosts it names (a basic-auth Secret's key hosts, a dockerconfigjson's
// entries): a Bundle naming the Secret with a registry or chart
// repository elsewhere gets SecretRefused, and that server never sees
// them.
func TestSourceCredentialsBoundToHost(t *testing.T) {
	reg := sourcetest.NewRegistry(t, "robot", "s3cret")
	reg.Push(t, "charts/podinfo", "1.0.0", sourcetest.Chart(t, "podinfo", "1.0.0", podinfo))
	repo := sourcetest.NewRepo(t, "robot", "s3cret")
	repo.Add("podinfo", "1.0.0", sourcetest.Chart(t, "podinfo", "1.0.0", podinfo), nil)
	oci := v1alpha1.BundleSource{OCI: reg.Ref("charts/podinfo", "1.0.0")}
	chartRepo := v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "podinfo"}}
	basic := func(hosts string) *corev1.Secret {
		return secret("creds", "", map[string]string{"username": "robot", "password": "s3cret", "hosts": hosts})
	}
	docker := func(host string) *corev1.Secret {
		return secret("pull", corev1.SecretTypeDockerConfigJson, map[string]string{".dockerconfigjson": `{"auths":{"` + host + `":{"username":"robot","password":"s3cret"}}}`})
	}
	for _, tt := range []struct {
		name  string
		spec  v1alpha1.BundleSource
		auth  *corev1.Secret
		ok    bool
		where string
	}{
		{"basic, another host", oci, basic("registry.example.com"), false, "registry.example.com"},
		{"basic, another port", oci, basic(strings.Split(reg.Host, ":")[0] + ":1"), false, "key hosts"},
		{"basic, its host", oci, basic("registry.example.com, " + reg.Host), true, ""},
		{"basic, chart repository elsewhere", chartRepo, basic(reg.Host), false, reg.Host},
		{"basic, chart repository's host", chartRepo, basic("https://" + repo.Host + "/charts"), true, ""},
		{"dockerconfigjson, another host", oci, docker("https://registry.example.com/v1/"), false, "no entry for " + reg.Host},
		{"dockerconfigjson, its host", oci, docker(reg.Host), true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ca := reg.CA
			srv := reg.Authorizations
			if tt.spec.ChartRepository != nil {
				ca, srv = repo.CA, repo.Authorizations
			}
			creds, err := source.CredentialsFromSecrets(tt.auth, secret("ca", "", map[string]string{"ca.crt": string(ca)}))
			if err != nil {
				t.Fatal(err)
			}
			before := len(srv())
			_, err = source.Fetch(ctx(t), tt.spec, creds, loopback)
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantReason(t, err, source.ReasonSecretRefused)
			if msg := err.Error(); !strings.Contains(msg, tt.auth.Name) || !strings.Contains(msg, tt.where) || strings.Contains(msg, "s3cret") {
				t.Errorf("message %q; want it to name Secret %s and %q, never the password", msg, tt.auth.Name, tt.where)
			}
			if got := srv()[before:]; len(got) != 0 {
				t.Errorf("the server received credentials: %q", got)
			}
		})
	}
	t.Run("a Secret without hosts", func(t *testing.T) {
		_, err := source.CredentialsFromSecrets(secret("creds", corev1.SecretTypeBasicAuth, map[string]string{"username": "robot", "password": "s3cret"}), nil)
		if err == nil || !strings.Contains(err.Error(), "needs the key hosts") {
			t.Errorf("err = %v; want it to ask for the key hosts", err)
		}
	})
	t.Run("a TLS Secret", func(t *testing.T) {
		_, err := source.CredentialsFromSecrets(secret("webhook-cert", corev1.SecretTypeTLS, map[string]string{"tls.crt": "x", "tls.key": "y", "username": "u", "password": "p"}), nil)
		wantReason(t, err, source.ReasonSecretRefused)
	})
}

// TestSourceTokenServer: a registry whose challenge names a token server
// on another host gets the credentials there only when the Secret names
// that host too (a basic-auth Secret's hosts, a dockerconfigjson entry
// with the same credentials); else the pull is refused and the token
// server sees nothing. The command line's credentials follow the
// registry's challenge, as helm's and docker's do.
func TestSourceTokenServer(t *testing.T) {
	ts := sourcetest.NewTokenServer(t, "robot", "s3cret")
	reg := sourcetest.NewTokenRegistry(t, ts)
	reg.Push(t, "charts/podinfo", "1.0.0", sourcetest.Chart(t, "podinfo", "1.0.0", podinfo))
	spec := v1alpha1.BundleSource{OCI: reg.Ref("charts/podinfo", "1.0.0")}
	dockerEntry := func(host string) string { return `"` + host + `":{"username":"robot","password":"s3cret"}` }
	for _, tt := range []struct {
		name  string
		creds source.Credentials
		ok    bool
	}{
		{"the registry's host only", source.Credentials{Username: "robot", Password: "s3cret", Hosts: []string{reg.Host}, Secret: "creds"}, false},
		{"the token server's host too", source.Credentials{Username: "robot", Password: "s3cret", Hosts: []string{reg.Host, ts.Host}, Secret: "creds"}, true},
		{"dockerconfigjson, the registry's entry only", source.Credentials{DockerConfig: []byte(`{"auths":{` + dockerEntry(reg.Host) + `}}`), Secret: "pull"}, false},
		{"dockerconfigjson, both entries", source.Credentials{DockerConfig: []byte(`{"auths":{` + dockerEntry(reg.Host) + `,` + dockerEntry(ts.Host) + `}}`), Secret: "pull"}, true},
		{"the command line's", source.Credentials{Username: "robot", Password: "s3cret"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.creds.CA = append(append([]byte{}, reg.CA...), ts.CA...)
			before := len(ts.Authorizations())
			_, err := source.Fetch(ctx(t), spec, tt.creds, loopback)
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantReason(t, err, source.ReasonSecretRefused)
			if msg := err.Error(); !strings.Contains(msg, ts.Host) || strings.Contains(msg, "s3cret") {
				t.Errorf("message %q; want it to name the token server %s, never the password", msg, ts.Host)
			}
			if got := ts.Authorizations()[before:]; len(got) != 0 {
				t.Errorf("the token server received credentials: %q", got)
			}
		})
	}
}
