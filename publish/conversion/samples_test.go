package conversion

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSamples(t *testing.T) {
	s := schema(t, `{"type":"object","properties":{
		"size":{"type":"integer","minimum":1,"maximum":10},
		"ratio":{"type":"number","maximum":1},
		"mode":{"type":"string","enum":["a","b","c"]},
		"name":{"type":"string","maxLength":5},
		"label":{"type":"string","pattern":"^[a-z][a-z0-9]*$"},
		"enabled":{"type":"boolean","default":true},
		"ports":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"port":{"type":"integer"}}}},
		"env":{"type":"object","additionalProperties":{"type":"string"}},
		"any":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
		"port":{"x-kubernetes-int-or-string":true}}}`)
	a, b := Samples(s, 6), Samples(s, 6)
	if d := cmp.Diff(a, b); d != "" {
		t.Fatalf("Samples is not deterministic (-first +second):\n%s", d)
	}
	modes := map[any]bool{}
	sizes := map[any]bool{}
	for i, m := range a {
		for k := range s.Properties {
			if _, ok := m[k]; !ok {
				t.Errorf("sample %d lacks %s: %v", i, k, m)
			}
		}
		modes[m["mode"]] = true
		sizes[m["size"]] = true
		if n := m["size"].(int64); n < 1 || n > 10 {
			t.Errorf("sample %d: size %d outside [1, 10]", i, n)
		}
		if r := m["ratio"].(float64); r > 1 {
			t.Errorf("sample %d: ratio %v over its maximum", i, r)
		}
		if n := len(m["name"].(string)); n > 5 {
			t.Errorf("sample %d: name longer than 5: %q", i, m["name"])
		}
		ports := m["ports"].([]any)
		if len(ports) < 1 || len(ports) > 2 {
			t.Errorf("sample %d: %d ports, want 1 or 2", i, len(ports))
		}
		if len(ports) == 2 && cmp.Equal(ports[0], ports[1]) {
			t.Errorf("sample %d: two equal ports %v", i, ports)
		}
		if len(m["env"].(map[string]any)) == 0 {
			t.Errorf("sample %d: an empty map", i)
		}
	}
	if len(modes) != 3 {
		t.Errorf("the samples take modes %v, want each of a, b, c", modes)
	}
	if !sizes[int64(1)] || !sizes[int64(10)] {
		t.Errorf("the samples take sizes %v, want the minimum and the maximum", sizes)
	}
	if a[0]["enabled"] != true {
		t.Errorf("sample 0 does not take the default: enabled = %v", a[0]["enabled"])
	}
	if got := Samples(nil, 2); len(got) != 2 || len(got[0]) == 0 {
		t.Errorf("Samples(nil) = %v", got)
	}
}

// TestSamplesRoundTrip drives round trips of the AppService pair with
// samples of each version's schema: nothing is lost either way.
func TestSamplesRoundTrip(t *testing.T) {
	c := newAppService(t)
	schemas := appServiceSchemas(t)
	for _, tt := range []struct{ from, via string }{{"v1", "v2"}, {"v2", "v1"}} {
		for i, spec := range Samples(schemas[tt.from], 8) {
			obj := map[string]any{"apiVersion": "app.example.com/" + tt.from, "kind": "AppService",
				"metadata": map[string]any{"name": "x"}, "spec": spec}
			lost, err := c.RoundTrip(obj, tt.via)
			if err != nil {
				t.Fatalf("%s sample %d: RoundTrip via %s: %v", tt.from, i, tt.via, err)
			}
			if len(lost) > 0 {
				t.Errorf("%s sample %d %v: RoundTrip via %s lost %v", tt.from, i, spec, tt.via, lost)
			}
		}
	}
}

func TestAnnotatedFields(t *testing.T) {
	c := newAppService(t)
	tests := []struct {
		version, spec, to string
		want              []string
	}{
		{"v1", `{"size":2,"legacy":"x","ports":[{"name":"a","port":1,"protocol":"UDP"}]}`, "v2", []string{"spec.legacy", "spec.ports"}},
		{"v1", `{"size":2,"ports":[{"name":"a","port":1}]}`, "v2", nil},
		{"v2", `{"replicas":2,"paused":true}`, "v1", []string{"spec.paused"}},
	}
	for _, tt := range tests {
		got, err := c.AnnotatedFields(object(t, tt.version, tt.spec), tt.to)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s %s to %s (-want +got):\n%s", tt.version, tt.spec, tt.to, d)
		}
	}
}

func TestRoundTripError(t *testing.T) {
	api := appServiceAPI()
	api.Versions[0].Conversion.FromStorage = append(api.Versions[0].Conversion.FromStorage, setRule("size", "self.replicas * 2"))
	c, err := New(api, appServiceSchemas(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.RoundTrip(object(t, "v1", `{"image":"x"}`), "v2")
	var re *Error
	if !errorsAs(err, &re) || re.Index != 2 || re.Rule != "spec.api.versions[0].conversion.fromStorage[2]" {
		t.Errorf("RoundTrip: %v, want the *Error of fromStorage[2]", err)
	}
}
