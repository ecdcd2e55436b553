package e2e_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/reconcile/admission/serving"
)

// testWebhookAuth attacks the webhook `make run` serves as a pod would: a
// forged dry-run AdmissionReview of Composition blog, POSTed straight to
// https://localhost:PORT without a client certificate, gets no live value,
// path or member name; the same review presenting the local API server's
// webhook client certificate (hack/local-cluster.sh) gets the preview,
// and so does `kubectl apply --server-side --dry-run=server` through the
// API server. Run after testPreview, which left blog at 3 replicas.
func testWebhookAuth(t *testing.T, k client.Client, kc kubectl, serving serving.ServingOptions, kubeconfig string) {
	ctx := context.Background()
	live := &unstructured.Unstructured{}
	live.SetAPIVersion("stencil.dev/v1alpha1")
	live.SetKind("Composition")
	if err := k.Get(ctx, client.ObjectKey{Namespace: "default", Name: "blog"}, live); err != nil {
		t.Fatal(err)
	}
	edited := live.DeepCopy()
	if err := unstructured.SetNestedField(edited.Object, int64(4), "spec", "values", "replicaCount"); err != nil {
		t.Fatal(err)
	}
	const want = "stencil: Deployment/blog-webapp: spec.replicas 3 → 4"

	post := func(cert *tls.Certificate) ([]string, error) {
		oldRaw, _ := json.Marshal(live.Object)
		newRaw, _ := json.Marshal(edited.Object)
		body, _ := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{
				UID:       types.UID("forged-" + strconv.FormatInt(time.Now().UnixNano(), 36)),
				Kind:      metav1.GroupVersionKind{Group: "stencil.dev", Version: "v1alpha1", Kind: "Composition"},
				Resource:  metav1.GroupVersionResource{Group: "stencil.dev", Version: "v1alpha1", Resource: "compositions"},
				Name:      "blog",
				Namespace: "default",
				Operation: admissionv1.Update,
				UserInfo:  authenticationv1.UserInfo{Username: "stencil-admin", Groups: []string{"system:masters", "system:authenticated"}},
				Object:    runtime.RawExtension{Raw: newRaw},
				OldObject: runtime.RawExtension{Raw: oldRaw},
				DryRun:    ptr.To(true),
			},
		})
		// The attacker does not care whose serving certificate it is.
		hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				if cert == nil {
					return &tls.Certificate{}, nil
				}
				return cert, nil
			},
		}}}
		defer hc.CloseIdleConnections()
		url := "https://" + net.JoinHostPort(serving.Host, strconv.Itoa(serving.Port)) + admission.WebhookPath
		res, err := hc.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer func() { _ = res.Body.Close() }() // the review is decoded first: closing it can lose nothing
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(res.Body).Decode(review); err != nil {
			return nil, err
		}
		if review.Response == nil {
			return nil, fmt.Errorf("no response")
		}
		return review.Response.Warnings, nil
	}

	t.Run("a forged review without a client certificate gets nothing done", func(t *testing.T) {
		got, err := post(nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("warnings: %q", got)
		for _, w := range got {
			if strings.Contains(w, "blog-webapp") || strings.Contains(w, "spec.replicas") {
				t.Errorf("warning %q tells what the cluster holds", w)
			}
		}
		if len(got) != 1 || !strings.Contains(got[0], "not reviewed") {
			t.Errorf("warnings %q: want one saying it is not reviewed", got)
		}
	})

	// The webhook bounds its review (a render and a dry run) by a
	// deadline, and answers one past it "validation did not finish", as
	// the API server fails open past its own: on a busy machine a review
	// that would preview may not. A preview is asked for again until one
	// answers; what each answered is checked below.
	t.Run("the API server's client certificate gets the preview", func(t *testing.T) {
		pki := filepath.Join(filepath.Dir(kubeconfig), "pki")
		cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "webhook-client.crt"), filepath.Join(pki, "webhook-client.key"))
		if err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 0, "a review with the API server's client certificate to preview "+want, paced(func() (bool, error) {
			got, err := post(&cert)
			if err != nil {
				return false, err
			}
			return containsLine(got, want), fmt.Errorf("warnings %q lack %q", got, want)
		}))
	})

	t.Run("kubectl's server dry run still gets the preview", func(t *testing.T) {
		doc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "stencil.dev/v1alpha1", "kind": "Composition",
			"metadata": map[string]any{"name": "blog", "namespace": "default"}, "spec": edited.Object["spec"]}}
		yaml, err := json.Marshal(doc.Object)
		if err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 0, "kubectl apply --dry-run=server to preview "+want, paced(func() (bool, error) {
			_, errOut, err := kc.run(string(yaml), "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-")
			if err != nil {
				return false, fmt.Errorf("kubectl apply --dry-run=server: %v\n%s", err, errOut)
			}
			return strings.Contains(errOut, "Warning: "+want), fmt.Errorf("no %q in\n%s", want, errOut)
		}))
	})
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}
