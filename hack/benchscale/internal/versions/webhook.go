package versions

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// reviewer sends the conversion webhook ConversionReviews as the API
// server does, where the CRD's clientConfig sends them (its URL, with
// the CRD's token, and its caBundle): the harness is a cluster admin, who
// may read the CRD and so its token (see docs/security.md).
type reviewer struct {
	hc  *http.Client
	url string
}

func newReviewer(crd *apiextensionsv1.CustomResourceDefinition) (*reviewer, error) {
	c := crd.Spec.Conversion
	if c == nil || c.Webhook == nil || c.Webhook.ClientConfig == nil || c.Webhook.ClientConfig.URL == nil {
		return nil, fmt.Errorf("CRD %s converts through no webhook URL (the local cluster's controller serves it on loopback)", crd.Name)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.Webhook.ClientConfig.CABundle) {
		return nil, fmt.Errorf("CRD %s: the conversion webhook's caBundle holds no certificate", crd.Name)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	return &reviewer{hc: &http.Client{Transport: tr, Timeout: time.Minute}, url: *c.Webhook.ClientConfig.URL}, nil
}

// convertAll converts items to version in reviews of chunkSize objects,
// one after the other, as the API server converts a LIST it reads from
// etcd page by page, and returns the time they took.
func (rv *reviewer) convertAll(ctx context.Context, items []unstructured.Unstructured, version string) (time.Duration, error) {
	start := time.Now()
	for from := 0; from < len(items); from += chunkSize {
		if err := rv.review(ctx, items[from:min(from+chunkSize, len(items))], version); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// review sends one ConversionReview of items to version and checks the
// answer: Success, every object converted to version.
func (rv *reviewer) review(ctx context.Context, items []unstructured.Unstructured, version string) error {
	req := &apiextensionsv1.ConversionRequest{UID: types.UID(fmt.Sprintf("bench-%d", time.Now().UnixNano())), DesiredAPIVersion: group + "/" + version}
	for i := range items {
		raw, err := items[i].MarshalJSON()
		if err != nil {
			return err
		}
		req.Objects = append(req.Objects, runtime.RawExtension{Raw: raw})
	}
	body, err := json.Marshal(&apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "ConversionReview"}, Request: req})
	if err != nil {
		return err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, rv.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := rv.hc.Do(hreq)
	if err != nil {
		return fmt.Errorf("the conversion webhook: %w", err)
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below: closing loses nothing
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the conversion webhook answered %s", resp.Status)
	}
	return convertedAll(out, req, version)
}

// convertedAll checks a ConversionReview's answer to req: its uid, result
// Success, and every object converted to version.
func convertedAll(answer []byte, req *apiextensionsv1.ConversionRequest, version string) error {
	review := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(answer, review); err != nil {
		return fmt.Errorf("the conversion webhook's answer: %w", err)
	}
	r := review.Response
	switch {
	case r == nil:
		return errors.New("the conversion webhook's answer has no response")
	case r.UID != req.UID:
		return fmt.Errorf("the conversion webhook answered uid %s, asked %s", r.UID, req.UID)
	case r.Result.Status != metav1.StatusSuccess:
		return fmt.Errorf("the conversion webhook refused: %s", r.Result.Message)
	case len(r.ConvertedObjects) != len(req.Objects):
		return fmt.Errorf("the conversion webhook converted %d objects of %d", len(r.ConvertedObjects), len(req.Objects))
	}
	for _, o := range r.ConvertedObjects {
		var tm metav1.TypeMeta
		if err := json.Unmarshal(o.Raw, &tm); err != nil || tm.APIVersion != group+"/"+version {
			return fmt.Errorf("the conversion webhook returned an object in %q, asked %s/%s", tm.APIVersion, group, version)
		}
	}
	return nil
}
