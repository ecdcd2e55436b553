package applyset_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/reconcile/applyset"
)

func TestMaskSecretData(t *testing.T) {
	values := []string{"c2FtZQ==", "b2xk", "bmV3", "Z29uZQ==", "dG9rZW4=", "hunter2", "hunter3"}
	for _, tc := range []struct {
		name                string
		live, applied       string // "" for none
		wantLive, wantAfter string
		masked              bool
	}{
		// A Secret: data and stringData, on both sides.
		{name: "same, changed, removed and added keys",
			live:      `{"apiVersion":"v1","kind":"Secret","data":{"same":"c2FtZQ==","old":"b2xk","gone":"Z29uZQ=="},"stringData":{"p":"hunter2"}}`,
			applied:   `{"apiVersion":"v1","kind":"Secret","data":{"same":"c2FtZQ==","old":"bmV3","token":"dG9rZW4="},"stringData":{"p":"hunter3"}}`,
			wantLive:  `{"apiVersion":"v1","kind":"Secret","data":{"gone":"*** (before)","old":"*** (before)","same":"***"},"stringData":{"p":"*** (before)"}}`,
			wantAfter: `{"apiVersion":"v1","kind":"Secret","data":{"old":"*** (after)","same":"***","token":"*** (after)"},"stringData":{"p":"*** (after)"}}`,
			masked:    true},
		{name: "a Secret to create",
			applied:   `{"apiVersion":"v1","kind":"Secret","data":{"same":"c2FtZQ=="},"stringData":{"p":"hunter2"}}`,
			wantAfter: `{"apiVersion":"v1","kind":"Secret","data":{"same":"*** (after)"},"stringData":{"p":"*** (after)"}}`,
			masked:    true},
		{name: "stringData folded into data by the server",
			live:      `{"apiVersion":"v1","kind":"Secret","data":{"p":"b2xk"}}`,
			applied:   `{"apiVersion":"v1","kind":"Secret","data":{"p":"bmV3"}}`,
			wantLive:  `{"apiVersion":"v1","kind":"Secret","data":{"p":"*** (before)"}}`,
			wantAfter: `{"apiVersion":"v1","kind":"Secret","data":{"p":"*** (after)"}}`,
			masked:    true},
		{name: "kubectl's last-applied annotation holds the data in clear",
			live:      `{"apiVersion":"v1","kind":"Secret","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"p\":\"hunter2\"}}","team":"a"}}}`,
			applied:   `{"apiVersion":"v1","kind":"Secret","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"p\":\"hunter3\"}}"}}}`,
			wantLive:  `{"apiVersion":"v1","kind":"Secret","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"*** (before)","team":"a"}}}`,
			wantAfter: `{"apiVersion":"v1","kind":"Secret","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"*** (after)"}}}`,
			masked:    true},
		// Other kinds keep their values.
		{name: "a ConfigMap",
			live:      `{"apiVersion":"v1","kind":"ConfigMap","data":{"p":"hunter2"}}`,
			applied:   `{"apiVersion":"v1","kind":"ConfigMap","data":{"p":"hunter3"}}`,
			wantLive:  `{"apiVersion":"v1","kind":"ConfigMap","data":{"p":"hunter2"}}`,
			wantAfter: `{"apiVersion":"v1","kind":"ConfigMap","data":{"p":"hunter3"}}`},
		{name: "a Secret of another group",
			applied:   `{"apiVersion":"example.com/v1","kind":"Secret","data":{"p":"hunter2"}}`,
			wantAfter: `{"apiVersion":"example.com/v1","kind":"Secret","data":{"p":"hunter2"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var live *unstructured.Unstructured
			if tc.live != "" {
				live = object(t, tc.live)
			}
			applied := object(t, tc.applied)
			if got := applyset.MaskSecretData(live, applied); got != tc.masked {
				t.Errorf("MaskSecretData = %v, want %v", got, tc.masked)
			}
			for _, side := range []struct {
				got  *unstructured.Unstructured
				want string
			}{{live, tc.wantLive}, {applied, tc.wantAfter}} {
				if side.got == nil {
					continue
				}
				if diff := cmp.Diff(object(t, side.want).Object, side.got.Object); diff != "" {
					t.Errorf("masked (-want +got):\n%s", diff)
				}
				if !tc.masked {
					continue
				}
				data, _ := json.Marshal(side.got.Object)
				for _, v := range values {
					if strings.Contains(string(data), v) {
						t.Errorf("the value %q is left in %s", v, data)
					}
				}
			}
		})
	}
}

// TestChangedFieldsOfSecretsNeverPrintValues: whatever changes in a
// Secret's data and stringData, a change names the field only.
func TestChangedFieldsOfSecretsNeverPrintValues(t *testing.T) {
	live := object(t, `{"apiVersion":"v1","kind":"Secret","data":{"p":"b2xk","gone":"Z29uZQ=="},"stringData":{"s":"hunter2"}}`)
	applied := object(t, `{"apiVersion":"v1","kind":"Secret","data":{"p":"bmV3","token":"dG9rZW4="},"stringData":{"s":"hunter3","t":"hunter4"}}`)
	got := changes(applyset.ChangedFields(live, applied))
	want := []string{"data.gone removed", "data.p changed", "data.token added", "stringData.s changed", "stringData.t added"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ChangedFields (-want +got):\n%s", diff)
	}
	for _, c := range applyset.ChangedFields(live, applied) {
		if !c.Hidden || c.Old != nil || c.New != nil {
			t.Errorf("%s keeps its values: %+v", c.Path, c)
		}
	}
}
