package requests

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCountsTop(t *testing.T) {
	c := Counts{"get a": 3, "list b": 5, "patch c": 3, "watch d": 1}
	want := []string{"5 list b", "3 get a", "3 patch c"}
	if diff := cmp.Diff(want, c.Top(3)); diff != "" {
		t.Errorf("Top (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Counts{"list b": 2, "get z": 1}, Counts{"list b": 7, "get a": 3, "get z": 1}.Minus(Counts{"list b": 5, "get a": 3})); diff != "" {
		t.Errorf("Minus (-want +got):\n%s", diff)
	}
}

func TestCounter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	c := NewCounter()
	hc := &http.Client{Transport: c.Wrap(http.DefaultTransport)}
	send := func(method string) {
		req, err := http.NewRequest(method, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatal(err)
		}
	}
	send(http.MethodGet)
	c.Reset()
	send(http.MethodPatch)
	send(http.MethodPatch)
	send(http.MethodPost)
	if diff := cmp.Diff(Counts{"patch objects": 2, "create objects": 1}, c.Snapshot()); diff != "" {
		t.Errorf("Snapshot after Reset (-want +got):\n%s", diff)
	}
}
