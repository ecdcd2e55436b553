package cli_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/yaml"

	clicontroller "github.com/stencil-dev/stencil/internal/cli/controller"
	"github.com/stencil-dev/stencil/internal/testenv"
)

// TestMetricsNeedAnAuthorizedToken serves the controller's metrics as
// `stencil controller` does by default (--metrics-secure): over HTTPS,
// HTTP/2 not offered; a scrape without a token is refused (401), one
// whose ServiceAccount is not bound to config/rbac's
// stencil-metrics-reader too (403), and a bound one is served.
func TestMetricsNeedAnAuthorizedToken(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := testenv.FreePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Metrics: clicontroller.MetricsServer(addr, true, false), HealthProbeBindAddress: "0",
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	// Two ServiceAccounts' tokens: one never bound to the reader role, one
	// bound to it before its first scrape (the filter caches a denial for
	// 30 s: binding the first one after its 403 would test that cache's
	// expiry, waiting, not the binding).
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := "metrics-" + rand.String(6)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	tokenOf := func(account string) string {
		t.Helper()
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, account, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	token, boundToken := tokenOf("prometheus"), tokenOf("scraper")

	scrape := func(token string, protos ...string) (int, string, string, error) {
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, NextProtos: protos}, // its certificate is self-signed
			ForceAttemptHTTP2: true,
		}}
		defer hc.CloseIdleConnections()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := hc.Do(req)
		if err != nil {
			return 0, "", "", err
		}
		defer func() { _ = res.Body.Close() }() // read to the end: closing it can lose nothing
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body), res.Proto, nil
	}
	testenv.Eventually(t, 0, "the metrics server to answer", func() (bool, error) {
		_, _, _, err := scrape("")
		return err == nil, err
	})

	t.Run("without a token: 401", func(t *testing.T) {
		if code, _, _, err := scrape(""); err != nil || code != http.StatusUnauthorized {
			t.Errorf("GET /metrics without a token: %d, %v; want 401", code, err)
		}
	})
	t.Run("plain HTTP is not served", func(t *testing.T) {
		res, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/metrics")
		if err == nil {
			defer func() { _ = res.Body.Close() }() // only the status is looked at
			if res.StatusCode == http.StatusOK {
				t.Errorf("GET http://%s/metrics: 200", addr)
			}
		}
	})
	t.Run("a token not bound to stencil-metrics-reader: 403", func(t *testing.T) {
		if code, _, _, err := scrape(token); err != nil || code != http.StatusForbidden {
			t.Errorf("GET /metrics with an unbound token: %d, %v; want 403", code, err)
		}
	})
	t.Run("a token bound to stencil-metrics-reader is served, over HTTP/1.1", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "rbac", "metrics_reader.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		role := &rbacv1.ClusterRole{}
		if err := yaml.Unmarshal(data, role); err != nil {
			t.Fatal(err)
		}
		role.Name += "-" + ns
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "scraper", Namespace: ns}}}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
			_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
		})
		// The API server's authorizer sees the binding some time after it
		// is written.
		var body, proto string
		testenv.Eventually(t, 0, "GET /metrics with a bound token to be served", func() (bool, error) {
			code, b, p, err := scrape(boundToken, "h2", "http/1.1")
			body, proto = b, p
			return err == nil && code == http.StatusOK, fmt.Errorf("%d, %v", code, err)
		})
		if !strings.Contains(body, "# TYPE") {
			t.Errorf("GET /metrics: no metrics in %.200q", body)
		}
		if proto != "HTTP/1.1" {
			t.Errorf("GET /metrics offering h2 spoke %s; want HTTP/1.1 (HTTP/2 off unless --enable-http2)", proto)
		}
	})
	t.Run("the TLS handshake does not offer h2", func(t *testing.T) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close() }() // only the handshake is looked at
		if p := conn.ConnectionState().NegotiatedProtocol; p == "h2" {
			t.Errorf("ALPN negotiated %q", p)
		}
	})
}
