package reconcile_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/admission"
)

// BenchmarkForgedReviews (issue 29 item 3): a pod that can reach the
// webhook's port posts 1,000 forged AdmissionReviews in 10 s (100 a
// second, a new TLS connection each, no client certificate, half to the
// validating and half to the mutating path, each a dry run of a
// Composition that renders) while a cluster admin creates a Composition
// every 100 ms through the API server, whose calls to the same webhook
// carry its client certificate. It reports the creates' latency (p50,
// p99) under attack and, for comparison, in 10 s without it; the CPU the
// controller's process spent in each window; and how the forged reviews
// were answered (200 unreviewed, 429 throttled).
func BenchmarkForgedReviews(b *testing.B) {
	const name = "stencil-forged-bench"
	selector := map[string]string{suite.AdmissionLabel: "forged"}
	hooks, _ := env.StartAdmission(b, name, "forged", selector, admission.Options{})
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "forged-" + rand.String(8), Labels: selector}}
	mustCreate(b, ns)
	b.Cleanup(func() { _ = k.Delete(context.Background(), ns) })
	bundleName := "forged-shop-" + ns.Name
	bundle(b, bundleName, suite.ShopFiles(), suite.WithShopSchema)
	// The webhook serves once it refuses invalid values.
	testenv.Eventually(b, 0, "the webhook to refuse invalid values", func() (bool, error) {
		err := k.Create(ctx, composition(ns.Name, "probe", bundleName, `{"replicas":9}`), client.DryRunAll)
		return apierrors.IsInvalid(err), err
	})

	forged := forgedReview(b, ns.Name, bundleName)
	servingCA := x509.NewCertPool()
	servingCA.AppendCertsFromPEM(hooks.LocalServingCAData)
	base := "https://" + net.JoinHostPort(hooks.LocalServingHost, strconv.Itoa(hooks.LocalServingPort))
	f := &reviewForger{base: base, host: hooks.LocalServingHost, ca: servingCA, review: forged}
	creates := func(prefix string) []time.Duration {
		var took []time.Duration
		for i := 0; i < 100; i++ {
			start := time.Now()
			if err := k.Create(ctx, composition(ns.Name, fmt.Sprintf("%s-%d", prefix, i), bundleName, `{"replicas":2}`)); err != nil {
				b.Fatalf("create: %v", err)
			}
			took = append(took, time.Since(start))
			time.Sleep(100*time.Millisecond - min(time.Since(start), 100*time.Millisecond))
		}
		return took
	}

	b.ResetTimer()
	cpu0 := processCPU()
	quiet := creates("quiet")
	cpuQuiet := processCPU() - cpu0
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go f.attack(stop, &wg)
	cpu1 := processCPU()
	loud := creates("loud")
	cpuLoud := processCPU() - cpu1
	close(stop)
	wg.Wait()
	b.StopTimer()

	b.ReportMetric(percentile(quiet, 50), "quiet-p50-ms")
	b.ReportMetric(percentile(quiet, 99), "quiet-p99-ms")
	b.ReportMetric(percentile(loud, 50), "attacked-p50-ms")
	b.ReportMetric(percentile(loud, 99), "attacked-p99-ms")
	b.ReportMetric(cpuQuiet.Seconds(), "quiet-cpu-s")
	b.ReportMetric(cpuLoud.Seconds(), "attacked-cpu-s")
	f.answered.Range(func(code, n any) bool {
		b.ReportMetric(float64(n.(*atomic.Int64).Load()), fmt.Sprintf("forged-%v", code))
		return true
	})
}

// reviewForger posts forged reviews to the webhook at base, as a caller
// without the API server's client certificate, and counts the answers.
type reviewForger struct {
	base, host string
	ca         *x509.CertPool
	review     []byte
	answered   sync.Map // HTTP status → *atomic.Int64
}

// attack posts a review every 10 ms (at most 1000), half to the
// validating and half to the mutating path, until stop is closed.
func (f *reviewForger) attack(stop <-chan struct{}, done *sync.WaitGroup) {
	defer done.Done()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < 1000; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		go func() {
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
				TLSClientConfig: &tls.Config{RootCAs: f.ca, ServerName: f.host}}}
			path := admission.WebhookPath
			if i%2 == 1 {
				path = admission.MutatePath
			}
			code := 0
			if res, err := hc.Post(f.base+path, "application/json", bytes.NewReader(f.review)); err == nil {
				code = res.StatusCode
				_ = res.Body.Close()
			}
			n, _ := f.answered.LoadOrStore(code, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
		}()
	}
}

// forgedReview is a dry-run create of a Composition of bundleName in ns,
// as the API server would send it for a cluster admin.
func forgedReview(b *testing.B, ns, bundleName string) []byte {
	comp := composition(ns, "forged", bundleName, `{"replicas":3}`)
	comp.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Composition"))
	comp.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":3}`)}
	raw, err := json.Marshal(comp)
	if err != nil {
		b.Fatal(err)
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:      types.UID("forged"),
			Kind:     metav1.GroupVersionKind{Group: "stencil.dev", Version: "v1alpha1", Kind: "Composition"},
			Resource: metav1.GroupVersionResource{Group: "stencil.dev", Version: "v1alpha1", Resource: "compositions"},
			Name:     "forged", Namespace: ns, Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: "stencil-admin", Groups: []string{"system:masters", "system:authenticated"}},
			Object:   runtime.RawExtension{Raw: raw},
			DryRun:   ptr.To(true),
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// processCPU is the CPU time (user and system) this process has used: the
// controller runs in it.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// percentile is the p-th percentile of took, in milliseconds.
func percentile(took []time.Duration, p int) float64 {
	s := slices.Clone(took)
	slices.Sort(s)
	i := min(len(s)-1, len(s)*p/100)
	return float64(s[i].Microseconds()) / 1000
}
