package versions

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
)

// TestConvertedAll: an answer counts only when it is the request's, a
// Success, with every object in the version asked for.
func TestConvertedAll(t *testing.T) {
	req := &apiextensionsv1.ConversionRequest{UID: "u", DesiredAPIVersion: group + "/v1",
		Objects: []runtime.RawExtension{{Raw: []byte(`{}`)}, {Raw: []byte(`{}`)}}}
	in := func(version string) runtime.RawExtension {
		return runtime.RawExtension{Raw: []byte(`{"apiVersion":"` + group + "/" + version + `","kind":"AppService"}`)}
	}
	answer := func(r *apiextensionsv1.ConversionResponse) []byte {
		b, err := json.Marshal(&apiextensionsv1.ConversionReview{Response: r})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ok := metav1.Status{Status: metav1.StatusSuccess}
	for _, tc := range []struct {
		name   string
		answer []byte
		want   string
	}{
		{"every object converted", answer(&apiextensionsv1.ConversionResponse{UID: "u", Result: ok, ConvertedObjects: []runtime.RawExtension{in("v1"), in("v1")}}), ""},
		{"no response", answer(nil), "has no response"},
		{"another review's", answer(&apiextensionsv1.ConversionResponse{UID: "x", Result: ok}), "answered uid x"},
		{"a failure", answer(&apiextensionsv1.ConversionResponse{UID: "u", Result: metav1.Status{Status: metav1.StatusFailure, Message: "no"}}), "refused: no"},
		{"one object short", answer(&apiextensionsv1.ConversionResponse{UID: "u", Result: ok, ConvertedObjects: []runtime.RawExtension{in("v1")}}), "converted 1 objects of 2"},
		{"the wrong version", answer(&apiextensionsv1.ConversionResponse{UID: "u", Result: ok, ConvertedObjects: []runtime.RawExtension{in("v1"), in("v2")}}), `in "app.example.com/v2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := convertedAll(tc.answer, req, "v1")
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("convertedAll = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestWebhookCallsMinus(t *testing.T) {
	got := webhookCalls{calls: 12, seconds: 0.5}.Minus(webhookCalls{calls: 2, seconds: 0.25})
	if want := (table.WebhookCalls{Calls: 10, Time: 250 * time.Millisecond}); got != want {
		t.Errorf("Minus = %+v, want %+v", got, want)
	}
}
