package requests

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// auditLines are audit events as the API server writes them with
// omitStages: [RequestReceived], trimmed to the fields read.
const auditLines = `{"kind":"Event","auditID":"a1","stage":"ResponseComplete","verb":"get","user":{"username":"ctl"},"objectRef":{"resource":"compositions","namespace":"bench","name":"c-1","apiGroup":"stencil.dev"},"requestURI":"/apis/stencil.dev/v1alpha1/namespaces/bench/compositions/c-1","requestReceivedTimestamp":"2026-01-01T10:00:01.000000Z"}
{"kind":"Event","auditID":"a2","stage":"ResponseStarted","verb":"watch","user":{"username":"ctl"},"objectRef":{"resource":"configmaps","apiVersion":"v1"},"requestURI":"/api/v1/configmaps?watch=true","requestReceivedTimestamp":"2026-01-01T10:00:02.000000Z"}
{"kind":"Event","auditID":"a3","stage":"ResponseComplete","verb":"patch","user":{"username":"ctl"},"objectRef":{"resource":"compositions","subresource":"status","apiGroup":"stencil.dev"},"requestURI":"/apis/stencil.dev/v1alpha1/namespaces/bench/compositions/c-1/status","requestReceivedTimestamp":"2026-01-01T10:00:03.000000Z"}
{"kind":"Event","auditID":"a2","stage":"ResponseComplete","verb":"watch","user":{"username":"ctl"},"objectRef":{"resource":"configmaps","apiVersion":"v1"},"requestURI":"/api/v1/configmaps?watch=true","requestReceivedTimestamp":"2026-01-01T10:00:02.000000Z"}
{"kind":"Event","auditID":"a4","stage":"ResponseComplete","verb":"get","user":{"username":"admin"},"objectRef":{"resource":"compositions","apiGroup":"stencil.dev"},"requestURI":"/apis/stencil.dev/v1alpha1/namespaces/bench/compositions/c-1","requestReceivedTimestamp":"2026-01-01T10:00:03.000000Z"}
{"kind":"Event","auditID":"a5","stage":"ResponseComplete","verb":"get","user":{"username":"ctl"},"requestURI":"/apis?timeout=32s","requestReceivedTimestamp":"2026-01-01T10:00:04.000000Z"}
{"kind":"Event","auditID":"a6","stage":"ResponseComplete","verb":"create","user":{"username":"ctl"},"objectRef":{"resource":"events","apiGroup":"events.k8s.io"},"requestURI":"/apis/events.k8s.io/v1/namespaces/bench/events","requestReceivedTimestamp":"2026-01-01T10:00:09.000000Z"}
`

func TestCountAudit(t *testing.T) {
	at := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339, "2026-01-01T10:00:"+s+"Z")
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	for _, tc := range []struct {
		name        string
		user        string
		from, to    time.Time
		want        Counts
		reads, wrts int
	}{
		{
			name: "a watch logged at two stages counts once; other users and later requests do not count",
			user: "ctl", from: at("00"), to: at("05"),
			want:  Counts{"get compositions.stencil.dev": 1, "watch configmaps": 1, "patch compositions.stencil.dev/status": 1, "get /apis": 1},
			reads: 3, wrts: 1,
		},
		{
			name: "the window is closed at its start, open at its end",
			user: "ctl", from: at("02"), to: at("03"),
			want:  Counts{"watch configmaps": 1},
			reads: 1, wrts: 0,
		},
		{
			name: "creates are writes",
			user: "ctl", from: at("05"), to: at("10"),
			want:  Counts{"create events.events.k8s.io": 1},
			reads: 0, wrts: 1,
		},
		{
			name: "another user",
			user: "admin", from: at("00"), to: at("10"),
			want:  Counts{"get compositions.stencil.dev": 1},
			reads: 1, wrts: 0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := countAudit(strings.NewReader(auditLines), tc.user, tc.from, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			if got.Reads() != tc.reads || got.Writes() != tc.wrts || got.Total() != tc.reads+tc.wrts {
				t.Errorf("reads, writes, total = %d, %d, %d; want %d, %d, %d", got.Reads(), got.Writes(), got.Total(), tc.reads, tc.wrts, tc.reads+tc.wrts)
			}
		})
	}
}

func TestCountAuditRejectsABrokenLine(t *testing.T) {
	_, err := countAudit(strings.NewReader(`{"username":"ctl"`+"\n"), "ctl", time.Time{}, time.Now())
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("err = %v, want one naming line 1", err)
	}
}

func TestUnselectedReads(t *testing.T) {
	lines := `{"auditID":"1","verb":"list","user":{"username":"ctl"},"objectRef":{"resource":"configmaps"},"requestURI":"/api/v1/configmaps?labelSelector=applyset.kubernetes.io%2Fpart-of&limit=500","requestReceivedTimestamp":"2026-01-01T10:00:01Z"}
{"auditID":"2","verb":"watch","user":{"username":"ctl"},"objectRef":{"resource":"secrets"},"requestURI":"/api/v1/secrets?allowWatchBookmarks=true&watch=true","requestReceivedTimestamp":"2026-01-01T10:00:02Z"}
{"auditID":"2","verb":"watch","user":{"username":"ctl"},"objectRef":{"resource":"secrets"},"requestURI":"/api/v1/secrets?allowWatchBookmarks=true&watch=true","requestReceivedTimestamp":"2026-01-01T10:00:02Z"}
{"auditID":"3","verb":"list","user":{"username":"ctl"},"objectRef":{"resource":"configmaps","apiGroup":"other.example"},"requestURI":"/apis/other.example/v1/configmaps","requestReceivedTimestamp":"2026-01-01T10:00:03Z"}
{"auditID":"4","verb":"get","user":{"username":"ctl"},"objectRef":{"resource":"configmaps"},"requestURI":"/api/v1/namespaces/a/configmaps/b","requestReceivedTimestamp":"2026-01-01T10:00:04Z"}
{"auditID":"5","verb":"list","user":{"username":"admin"},"objectRef":{"resource":"configmaps"},"requestURI":"/api/v1/configmaps","requestReceivedTimestamp":"2026-01-01T10:00:05Z"}
`
	n, err := unselectedReads(strings.NewReader(lines), "ctl", time.Time{}, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("unselected reads = %d, want 1 (the watch of Secrets without a selector, once)", n)
	}
}
