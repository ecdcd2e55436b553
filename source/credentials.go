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

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
)

// Credentials are what a pull authenticates with and trusts.
type Credentials struct {
	// Username and Password are sent to the registry or repository (basic
	// auth, or exchanged for a registry's token).
	Username, Password string
	// DockerConfig is a .dockerconfigjson: its entry for the registry's
	// host gives the username and password.
	DockerConfig []byte
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
	// KeyCA is a CA Secret's key.
	KeyCA = "ca.crt"
)

// CredentialsFromSecrets reads Credentials from the Secrets of
// spec.source.secretRef (auth, either may be nil) and caSecretRef (ca).
// The error names the Secret and key, never a value.
func CredentialsFromSecrets(auth, ca *corev1.Secret) (Credentials, error) {
	var c Credentials
	if auth != nil {
		switch {
		case auth.Type == corev1.SecretTypeDockerConfigJson:
			c.DockerConfig = auth.Data[corev1.DockerConfigJsonKey]
			if len(c.DockerConfig) == 0 {
				return c, fmt.Errorf("Secret %s has no key %s", auth.Name, corev1.DockerConfigJsonKey)
			}
		default:
			c.Username, c.Password = string(auth.Data[KeyUsername]), string(auth.Data[KeyPassword])
			if c.Username == "" || c.Password == "" {
				return c, fmt.Errorf("Secret %s needs the keys %s and %s (or type %s)", auth.Name, KeyUsername, KeyPassword, corev1.SecretTypeDockerConfigJson)
			}
		}
	}
	if ca != nil {
		c.CA = ca.Data[KeyCA]
		if len(c.CA) == 0 {
			return c, fmt.Errorf("Secret %s has no key %s", ca.Name, KeyCA)
		}
	}
	return c, nil
}

// userPass returns the username and password for host.
func (c Credentials) userPass(host string) (string, string, error) {
	if len(c.DockerConfig) == 0 {
		return c.Username, c.Password, nil
	}
	var cfg struct {
		Auths map[string]struct {
			Username string `json:"username"`
			Password string `json:"password"`
			Auth     string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(c.DockerConfig, &cfg); err != nil {
		return "", "", errors.New("the credentials Secret's .dockerconfigjson is not JSON")
	}
	for k, a := range cfg.Auths {
		k = strings.TrimPrefix(strings.TrimPrefix(k, "https://"), "http://")
		if k, _, _ = strings.Cut(k, "/"); k != host {
			continue
		}
		if a.Auth != "" {
			dec, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return "", "", errors.New("the credentials Secret's .dockerconfigjson has an auth that is not base64")
			}
			u, p, _ := strings.Cut(string(dec), ":")
			return u, p, nil
		}
		return a.Username, a.Password, nil
	}
	return "", "", nil
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
	return policy.transport(t), nil
}
