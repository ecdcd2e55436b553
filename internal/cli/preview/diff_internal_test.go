package preview

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/reconcile/applyset"
)

func diffObject(t *testing.T, json string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(json)); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestUnifiedDiffMasksSecrets: a Secret's data and stringData show as
// "***" where live and the applied object agree and "*** (before)" /
// "*** (after)" where they differ; its values never show.
func TestUnifiedDiffMasksSecrets(t *testing.T) {
	const live = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns","resourceVersion":"7"},
		"data":{"same":"c2FtZQ==","old":"b2xk","gone":"Z29uZQ=="}}`
	const applied = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns","resourceVersion":"8"},
		"data":{"same":"c2FtZQ==","old":"bmV3","token":"dG9rZW4="},"stringData":{"p":"hunter2"}}`
	for _, tc := range []struct {
		name string
		pv   applyset.Preview
		want string
	}{
		{"changed", applyset.Preview{Desired: diffObject(t, applied), Live: diffObject(t, live), Applied: diffObject(t, applied)}, `--- live/Secret/ns/s
+++ stencil/Secret/ns/s
@@ -1,10 +1,12 @@
 apiVersion: v1
 data:
-  gone: '*** (before)'
-  old: '*** (before)'
+  old: '*** (after)'
   same: '***'
+  token: '*** (after)'
 kind: Secret
 metadata:
   name: s
   namespace: ns
+stringData:
+  p: '*** (after)'
 
`},
		{"created", applyset.Preview{Desired: diffObject(t, applied), Applied: diffObject(t, applied)}, `--- live/Secret/ns/s
+++ stencil/Secret/ns/s
@@ -1 +1,12 @@
+apiVersion: v1
+data:
+  old: '*** (after)'
+  same: '*** (after)'
+  token: '*** (after)'
+kind: Secret
+metadata:
+  name: s
+  namespace: ns
+stringData:
+  p: '*** (after)'
 
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := UnifiedDiff(tc.pv)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("UnifiedDiff (-want +got):\n%s", diff)
			}
			for _, v := range []string{"c2FtZQ==", "b2xk", "bmV3", "Z29uZQ==", "dG9rZW4=", "hunter2"} {
				if strings.Contains(got, v) {
					t.Errorf("the diff shows the value %q", v)
				}
			}
		})
	}
}
