package source

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
)

// Credentials are what a pull authenticates with and trusts.
type Credentials struct {
	// Username and Password are sent to the registry or repository (basic
	// auth, or exchanged for a registry's token), on the hosts of Hosts
	// only.
	Username, Password string
	// Hosts, when not nil, are the hosts (HOST or HOST:PORT, the https
	// port implied) Username and Password are for: a pull from another
	// host is refused (SecretRefused) before any request, and a request
	// carrying them to another host (a registry's token server elsewhere)
	// is refused without being sent. CredentialsFromSecrets sets them from
	// the Secret's key hosts. Nil, the command line's --username, sends
	// them to the registry or repository the user names and to the token
	// server that registry names.
	Hosts []string
	// DockerConfig is a .dockerconfigjson: its entry for a host gives the
	// username and password sent to that host, and to no other; a pull
	// from a host it has no entry for is refused (SecretRefused).
	DockerConfig []byte
	// Secret is the name of the Secret the credentials come from, for
	// messages.
	Secret string
	// CA holds PEM certificates the server's certificate is verified
	// with, in place of the system's roots.
	CA []byte
	// VerifyKeys is the key material spec.source.verify checks the
	// chart's signature with: PEM public keys (KeyCosignPub) for cosign,
	// an OpenPGP keyring (KeyKeyring) for helm.
	VerifyKeys []byte
}

// Keys of the Secrets a Bundle's source names.
const (
	// KeyUsername and KeyPassword are a credentials Secret's keys.
	KeyUsername = "username"
	KeyPassword = "password"
	// KeyHosts is a credentials Secret's list of the hosts its username
	// and password are for (HOST or HOST:PORT, separated by commas,
	// spaces or new lines), set by the cluster admin; required.
	KeyHosts = "hosts"
	// KeyCA is a CA Secret's key.
	KeyCA = "ca.crt"
)

// CredentialsFromSecrets reads Credentials from the Secrets of
// spec.source.secretRef (auth, either may be nil) and caSecretRef (ca).
// A credentials Secret is a kubernetes.io/dockerconfigjson one (its
// entries name their hosts), or an Opaque or kubernetes.io/basic-auth one
// with the keys username, password and hosts; a Secret of another type
// (a TLS certificate, a ServiceAccount token) is refused, an *Error of
// reason SecretRefused. The error names the Secret and key, never a
// value.
func CredentialsFromSecrets(auth, ca *corev1.Secret) (Credentials, error) {
	var c Credentials
	if auth != nil {
		c.Secret = auth.Name
		switch auth.Type {
		case corev1.SecretTypeDockerConfigJson:
			c.DockerConfig = auth.Data[corev1.DockerConfigJsonKey]
			if len(c.DockerConfig) == 0 {
				return c, fmt.Errorf("spec.source.secretRef: Secret %s has no key %s", auth.Name, corev1.DockerConfigJsonKey)
			}
		case "", corev1.SecretTypeOpaque, corev1.SecretTypeBasicAuth:
			c.Username, c.Password = string(auth.Data[KeyUsername]), string(auth.Data[KeyPassword])
			if c.Username == "" || c.Password == "" {
				return c, fmt.Errorf("spec.source.secretRef: Secret %s needs the keys %s and %s (or type %s)", auth.Name, KeyUsername, KeyPassword, corev1.SecretTypeDockerConfigJson)
			}
			c.Hosts = ParseHosts(string(auth.Data[KeyHosts]))
			if len(c.Hosts) == 0 {
				return c, fmt.Errorf("spec.source.secretRef: Secret %s needs the key %s: the hosts of the registries or chart repositories its %s and %s are for, and may be sent to", auth.Name, KeyHosts, KeyUsername, KeyPassword)
			}
		default:
			return c, fail(ReasonSecretRefused, nil, "Secret %s is of type %s: registry credentials are an Opaque or %s Secret (keys %s, %s, %s) or a %s one",
				auth.Name, auth.Type, corev1.SecretTypeBasicAuth, KeyUsername, KeyPassword, KeyHosts, corev1.SecretTypeDockerConfigJson)
		}
	}
	if ca != nil {
		c.CA = ca.Data[KeyCA]
		if len(c.CA) == 0 {
			return c, fmt.Errorf("spec.source.caSecretRef: Secret %s has no key %s", ca.Name, KeyCA)
		}
	}
	return c, nil
}

// ParseHosts reads a list of hosts (HOST or HOST:PORT; a scheme, a path
// and the https port are dropped), separated by commas, spaces or new
// lines.
func ParseHosts(s string) []string {
	var hosts []string
	for _, h := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		if h = canonicalHost(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// userPass returns the username and password for host: none when c
// holds none, and an *Error of reason SecretRefused when c's credentials
// are not for host.
func (c Credentials) userPass(host string) (string, string, error) {
	if len(c.DockerConfig) > 0 {
		u, p, ok, err := c.dockerEntry(host)
		switch {
		case err != nil:
			return "", "", err
		case !ok:
			return "", "", fail(ReasonSecretRefused, nil, "Secret %s (%s) has no entry for %s: its credentials are sent only to the hosts of its entries", c.Secret, corev1.SecretTypeDockerConfigJson, canonicalHost(host))
		}
		return u, p, nil
	}
	if c.Username == "" && c.Password == "" || c.Hosts == nil || c.bound(host) {
		return c.Username, c.Password, nil
	}
	return "", "", fail(ReasonSecretRefused, nil, "the credentials of Secret %s are for %s, not %s: they are sent only to the hosts of its key %s", c.Secret, strings.Join(c.Hosts, ", "), canonicalHost(host), KeyHosts)
}

// bound reports host among c.Hosts.
func (c Credentials) bound(host string) bool {
	host = canonicalHost(host)
	for _, h := range c.Hosts {
		if h == host {
			return true
		}
	}
	return false
}

// sendable reports whether user and pass may be sent to host: c has
// them for host (in c.Hosts, or an entry of c.DockerConfig), or c is the
// command line's (no Hosts, no DockerConfig).
func (c Credentials) sendable(host, user, pass string) bool {
	if len(c.DockerConfig) > 0 {
		u, p, ok, err := c.dockerEntry(host)
		return err == nil && ok && u == user && p == pass
	}
	return c.Hosts == nil || c.bound(host)
}

// dockerEntry is the username and password of c.DockerConfig's entry for
// host (a key https://HOST/..., HOST/... or HOST), and whether it has one.
func (c Credentials) dockerEntry(host string) (user, pass string, ok bool, err error) {
	var cfg struct {
		Auths map[string]struct {
			Username string `json:"username"`
			Password string `json:"password"`
			Auth     string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(c.DockerConfig, &cfg); err != nil {
		return "", "", false, fail(ReasonInvalidSource, nil, "Secret %s: its %s is not JSON", c.Secret, corev1.DockerConfigJsonKey)
	}
	host = canonicalHost(host)
	for k, a := range cfg.Auths {
		if canonicalHost(k) != host {
			continue
		}
		if a.Auth != "" {
			dec, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return "", "", false, fail(ReasonInvalidSource, nil, "Secret %s: its %s has an auth that is not base64", c.Secret, corev1.DockerConfigJsonKey)
			}
			u, p, _ := strings.Cut(string(dec), ":")
			return u, p, true, nil
		}
		return a.Username, a.Password, true, nil
	}
	return "", "", false, nil
}

// authenticator is the OCI authenticator for host.
func (c Credentials) authenticator(host string) (authn.Authenticator, error) {
	u, p, err := c.userPass(host)
	if err != nil {
		return nil, err
	}
	if u == "" && p == "" {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(authn.AuthConfig{Username: u, Password: p}), nil
}

// transport is an https-only transport of policy that trusts c.CA (the
// system's roots without one).
func (c Credentials) transport(policy Policy) (http.RoundTripper, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	if len(c.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(c.CA) {
			return nil, errors.New("the CA Secret's ca.crt holds no PEM certificate")
		}
		t.TLSClientConfig.RootCAs = pool
	}
	return boundCredentials{creds: c, next: policy.transport(t)}, nil
}

// boundCredentials refuses a request that carries basic credentials to a
// host they are not for: go-containerregistry sends them to the token
// server a registry's challenge names, wherever it is.
type boundCredentials struct {
	creds Credentials
	next  http.RoundTripper
}

func (b boundCredentials) RoundTrip(r *http.Request) (*http.Response, error) {
	if u, p, ok := r.BasicAuth(); ok && !b.creds.sendable(r.URL.Host, u, p) {
		return nil, fail(ReasonSecretRefused, nil, "%s asks for the credentials of Secret %s, which are not for it: they are sent only to the hosts the Secret names (%s: add the host there if the registry's token server is there)",
			canonicalHost(r.URL.Host), b.creds.Secret, b.creds.hostsKey())
	}
	return b.next.RoundTrip(r)
}

// hostsKey names where c's hosts are set.
func (c Credentials) hostsKey() string {
	if len(c.DockerConfig) > 0 {
		return "an entry of its " + corev1.DockerConfigJsonKey + " with the same credentials"
	}
	return "its key " + KeyHosts
}
