package admission_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/reconcile/admission/server"
)

// slowStranger is one connection of a caller with no client certificate
// that sends a review's headers at once and its body a byte at a time.
type slowStranger struct {
	conn net.Conn
	// answered is closed once the server answered (a status line read);
	// status is its code.
	answered chan struct{}
	status   int
	// closed is closed once the server closed the connection; at is when.
	closed chan struct{}
	at     time.Time
}

// dialSlowStranger opens a connection to the webhook from source address
// from (each stranger its own, so none is throttled by rate), sends the
// headers of a 1 MiB review to path and then a byte every 100 ms until
// the server closes the connection or stop is closed.
func dialSlowStranger(addr, host string, ca *x509.CertPool, from net.IP, path string, stop <-chan struct{}) (*slowStranger, error) {
	d := &net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: from}}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: ca, ServerName: host, NextProtos: []string{"http/1.1"}})
	if err != nil {
		return nil, fmt.Errorf("stranger %s: %w", from, err)
	}
	s := &slowStranger{conn: conn, answered: make(chan struct{}), closed: make(chan struct{})}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", path, host, 1<<20)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-s.closed:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	go func() {
		defer func() { s.at = time.Now(); close(s.closed) }()
		r := bufio.NewReader(conn)
		if res, err := http.ReadResponse(r, nil); err == nil {
			s.status = res.StatusCode
			close(s.answered)
			// Whatever the server sends until it closes is discarded: the
			// body (a read-only body's Close reports nothing to act on),
			// then the rest of the connection.
			_ = res.Body.Close()
			_, _ = r.WriteTo(devNull{})
			return
		}
		close(s.answered)
	}()
	return s, nil
}

// devNull discards what is written to it.
type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }

// TestWebhookStrangersHoldNoSlot: callers without a client certificate,
// each from its own address and more of them than a path serves at once,
// send a review's body a byte at a time; meanwhile the API server's own
// review (its client certificate verified at the handshake), straight to
// the webhook and through the API server, is answered at once and refuses
// what it must, and every stranger's connection is closed once the
// server's read timeout passes.
func TestWebhookStrangersHoldNoSlot(t *testing.T) {
	const name = "stencil-strangers-test"
	selector := map[string]string{suite.AdmissionLabel: "strangers"}
	hooks, _ := env.StartAdmission(t, name, "strangers", selector, admission.Options{})
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "strangers-" + rand.String(8), Labels: selector}}
	env.MustCreate(t, ns)
	t.Cleanup(func() { _ = env.Delete(context.Background(), ns) })
	b := env.Bundle(t, "strangers-shop-"+ns.Name, suite.ShopFiles(), suite.WithShopSchema)
	env.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	env.Refusing(t, ns.Name, b.Name)

	servingCA := x509.NewCertPool()
	servingCA.AppendCertsFromPEM(hooks.LocalServingCAData)
	addr := net.JoinHostPort(hooks.LocalServingHost, strconv.Itoa(hooks.LocalServingPort))

	// More strangers than the path serves at once (32 before issue 37),
	// each from its own loopback address.
	const strangers = 40
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	start := time.Now()
	conns := make([]*slowStranger, strangers)
	errs := make([]error, strangers)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns[i], errs[i] = dialSlowStranger(addr, hooks.LocalServingHost, servingCA, net.IPv4(127, 0, 1, byte(10+i)), admission.WebhookPath, stop)
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, s := range conns {
			if s != nil {
				_ = s.conn.Close()
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	// Every stranger is in: once some are answered 429, the others hold
	// what strangers may hold (a slot a 429 finds taken stays taken, as
	// no body ends).
	testenv.Eventually(t, 0, "the strangers to fill what they may hold", func() (bool, error) {
		throttled := 0
		for _, s := range conns {
			select {
			case <-s.answered:
				if s.status == http.StatusTooManyRequests {
					throttled++
				}
			default:
			}
		}
		return throttled >= strangers-32, fmt.Errorf("%d strangers answered 429", throttled)
	})

	t.Run("the API server's review is answered at once", func(t *testing.T) {
		cert, err := tls.LoadX509KeyPair(env.WebhookClient.CertFile, env.WebhookClient.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: servingCA, ServerName: hooks.LocalServingHost, Certificates: []tls.Certificate{cert},
		}}}
		defer hc.CloseIdleConnections()
		sent := time.Now()
		res, err := hc.Post("https://"+addr+admission.WebhookPath, "application/json", bytes.NewReader(createReview(t, ns.Name, b.Name, `{"replicas":9}`)))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = res.Body.Close() }() // a read-only body: nothing to act on
		took := time.Since(sent)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("the verified review: %s, want it served", res.Status)
		}
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(res.Body).Decode(review); err != nil {
			t.Fatal(err)
		}
		if review.Response == nil || review.Response.Allowed {
			t.Errorf("the verified review of replicas 9: %+v, want it refused", review.Response)
		}
		if took >= server.ReadTimeout {
			t.Errorf("the verified review took %s: it waited for the strangers", took)
		}
	})

	t.Run("through the API server, invalid values are refused", func(t *testing.T) {
		err := env.Create(ctx, suite.Composition(ns.Name, "probe", b.Name, `{"replicas":9}`), client.DryRunAll)
		if !apierrors.IsInvalid(err) {
			t.Errorf("a dry-run create with replicas 9 while strangers send slowly: %v, want it refused by the webhook", err)
		}
	})

	t.Run("every stranger's connection is closed after the read timeout", func(t *testing.T) {
		// The read timeout, and slack for a loaded machine.
		limit := time.After(time.Until(start.Add(server.ReadTimeout + 20*time.Second)))
		for i, s := range conns {
			select {
			case <-s.closed:
			case <-limit:
				t.Fatalf("stranger %d's connection still open %s after it began sending", i, time.Since(start))
			}
		}
	})
}

// createReview is an AdmissionReview of the create of a Composition of
// bundle in ns with values, as the API server sends it.
func createReview(t *testing.T, ns, bundle, values string) []byte {
	t.Helper()
	comp := suite.Composition(ns, "review-"+rand.String(5), bundle, values)
	comp.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Composition"))
	raw, err := json.Marshal(comp)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:      types.UID("review-" + rand.String(6)),
			Kind:     metav1.GroupVersionKind{Group: "stencil.dev", Version: "v1alpha1", Kind: "Composition"},
			Resource: metav1.GroupVersionResource{Group: "stencil.dev", Version: "v1alpha1", Resource: "compositions"},
			Name:     comp.Name, Namespace: ns, Operation: admissionv1.Create,
			Object: runtime.RawExtension{Raw: raw},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}
