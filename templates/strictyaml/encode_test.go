package strictyaml

import (
	"math/rand/v2"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// slowToYAML is toYaml as Helm (and stencil before MarshalFast) writes it.
func slowToYAML(v any) (string, error) {
	data, err := yaml.Marshal(v)
	return strings.TrimSuffix(string(data), "\n"), err
}

// TestToYAMLFastRandom compares MarshalFast with Marshal on random nested
// values built from strings the resolver and the emitter treat specially
// (numbers, booleans, indicators, long lines with spaces) and keys that
// its key order sorts in unusual ways (digit runs, leading zeros).
func TestToYAMLFastRandom(t *testing.T) {
	words := []string{
		"", "a", "x y", "100m", "128Mi", "1.2.3", "1e3", "0x1F", "0b101", "1_000", "1:20", "2001-12-14",
		"2001-12-14t21:59:43.10-05:00", "yes", "No", "on", "OFF", "null", "~", ".inf", "-.INF", ".5", "+1",
		"-", "- a", "-a", "?", "? a", ":a", "a:", "a: b", "a:b", "a #b", "a#b", "#a", "'q'", "\"q\"", "a'b",
		"a\"b", "a\\b", "<<", "---", "...", "*ref", "&anchor", "!tag", "|", ">", "%", "@", "`", "[a]",
		"{a}", "a,b", "http://example.com/x?y=z", "nginx:1.25", "IfNotPresent", "true", "False", "y", "n",
		" lead", "trail ", strings.Repeat("word ", 20), strings.Repeat("w", 90), "v1.2.3", "3.0", "0.1",
		"007", "12345678901234567890", "--flag=x", "{{ include \"x\" . }}-y", "[type=Ready]", "True", "NULL",
		"?x", "? ", ":x", "x:", "x: ", "a :b", "it's", "'", "%x", "a\\b\"c", " ", "-- x", "--- x", "... x",
		"name", "tier", "type", "octal", "Off", "fooo", "a #", "#", "x\"", "y: z", "nn", "~x", "x~", "1-2", "abc def ghi jkl mno pqr stu vwx yz0 123 456 789 abc def ghi",
	}
	keys := []string{"a", "b", "A", "a1", "a2", "a10", "a01", "a001", "1", "2", "10", "01", "_x", "-y",
		"key with space", "app.kubernetes.io/name", "x.y", "", "yes", "é"[0:1] + "x", "z9z", "z10z"}
	r := rand.New(rand.NewPCG(1, 2))
	var gen func(depth int) any
	gen = func(depth int) any {
		n := r.IntN(10)
		if depth > 4 {
			n = r.IntN(6)
		}
		switch n {
		case 0, 1:
			return words[r.IntN(len(words))]
		case 2:
			return r.IntN(2000) - 1000
		case 3:
			return []float64{1.5, 3, 1e21, -0.25, 1e-7}[r.IntN(5)]
		case 4:
			return []any{nil, true, false, int64(-7)}[r.IntN(4)]
		case 5:
			return map[string]any{}
		case 6, 7:
			m := map[string]any{}
			for range r.IntN(5) {
				m[keys[r.IntN(len(keys))]] = gen(depth + 1)
			}
			return m
		default:
			l := make([]any, r.IntN(4))
			for i := range l {
				l[i] = gen(depth + 1)
			}
			return l
		}
	}
	var fast int
	for i := range 20000 {
		v := gen(0)
		want, err := slowToYAML(v)
		got, ok := MarshalFast(v)
		if !ok {
			continue
		}
		fast++
		if err != nil || got != want {
			t.Fatalf("value %d %#v: MarshalFast wrote\n%s\nMarshal writes (error %v)\n%s", i, v, got, err, want)
		}
	}
	if fast < 5000 {
		t.Errorf("MarshalFast wrote only %d of 20000 random values", fast)
	}
	t.Logf("%d of 20000 random values written the fast way, all as Marshal", fast)
}
