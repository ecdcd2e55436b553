package templates_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/stencil-dev/stencil/templates"
)

const kDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  template:
    spec:
      containers:
      - name: app
        image: nginx
`

const kPatch = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: nginx:1.28\n"

// kBundle is a bundle with a Deployment template, the given
// kustomization.yaml and extra files.
func kBundle(kustomization string, extra map[string]string) map[string]string {
	files := map[string]string{"values.yaml": "replicas: 2\n", "templates/deployment.yaml": kDeployment, "kustomization.yaml": kustomization}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

func TestKustomize(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"strategic merge patch", kBundle("resources: [templates/deployment.yaml]\npatches:\n- path: patch.yaml\n", map[string]string{"patch.yaml": kPatch}),
			[]string{"image: nginx:1.28", "replicas: 2"}},
		{"JSON 6902 patch", kBundle("resources: [templates/deployment.yaml]\npatches:\n- target: {kind: Deployment, name: web}\n  patch: |-\n    - op: replace\n      path: /spec/replicas\n      value: 7\n", nil),
			[]string{"replicas: 7"}},
		{"labels and a generator from a bundle file", kBundle("resources: [templates/deployment.yaml]\nlabels: [{pairs: {team: a}}]\nconfigMapGenerator:\n- name: cfg\n  files: [conf/app.ini, other=conf/app.ini]\n", map[string]string{"conf/app.ini": "x=1\n"}),
			[]string{"team: a", "name: cfg-", "app.ini: |", "other: |"}},
		{"patchesStrategicMerge: a path and inline content", kBundle("resources: [templates/deployment.yaml]\npatchesStrategicMerge:\n- patch.yaml\n- |\n  apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: web}\n  spec: {replicas: 5}\n", map[string]string{"patch.yaml": kPatch}),
			[]string{"image: nginx:1.28", "replicas: 5"}},
		{"nested base folder", kBundle("resources: [templates/deployment.yaml, base]\n", map[string]string{
			"base/kustomization.yaml": "resources: [cm.yaml]\nnamePrefix: base-\n",
			"base/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata: {a: b}\n"}),
			[]string{"name: base-cm", "name: web"}},
		{"nested component with its own patch", kBundle("resources: [templates/deployment.yaml]\ncomponents: [components/pinned]\n", map[string]string{
			"components/pinned/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nlabels: [{pairs: {pinned: \"true\"}}]\npatches:\n- path: patch.yaml\n",
			"components/pinned/patch.yaml":         kPatch}),
			[]string{"pinned: \"true\"", "image: nginx:1.28"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := templates.Render(bundle(t, tt.files), templates.Input{Composition: web})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				o.DeepCopy() // panics on a non-JSON number type such as int
			}
			got := toYAML(t, objs)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("output:\n%s\nwant it to contain %q", got, w)
				}
			}
		})
	}
}

// TestKustomizeExample: examples/bundles/hello-kustomize renders.
func TestKustomizeExample(t *testing.T) {
	b, err := templates.Load(os.DirFS(filepath.Join("..", "examples", "bundles", "hello-kustomize")), templates.LoadOptions{Name: "hello-kustomize"})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := templates.Render(b, templates.Input{Composition: web})
	if err != nil {
		t.Fatal(err)
	}
	got := toYAML(t, objs)
	for _, w := range []string{"app.kubernetes.io/part-of: hello", "sessionAffinity: ClientIP", "name: hello-config-", "app.properties: |"} {
		if !strings.Contains(got, w) {
			t.Errorf("output:\n%s\nwant it to contain %q", got, w)
		}
	}
}

// sentinels puts programs kustomize could run (git, helm, a container
// runtime, a shell...) first on PATH, each writing to the returned marker
// file when run, and an exec function at dir/fn.
func sentinels(t *testing.T) (dir, marker string) {
	t.Helper()
	dir = t.TempDir()
	marker = filepath.Join(t.TempDir(), "ran")
	for _, name := range []string{"git", "helm", "helmV3", "kustomize", "kubectl", "sh", "bash", "docker", "podman", "go", "fn"} {
		script := "#!/bin/sh\necho \"" + name + " $*\" >> '" + marker + "'\nexit 1\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir, marker
}

// listenForLeaks returns the address of a TCP listener on 127.0.0.1 and a
// count of the connections it took. A connection is counted before it is
// closed, so one made by a render is counted by the time the render returns.
func listenForLeaks(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	})
	var hits atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			// Counted, which is all it is for; this goroutine may outlive
			// the test, which it must not fail from there.
			_ = c.Close()
		}
	}()
	return l.Addr().String(), &hits
}

// TestKustomizeConfined: kustomize reads the bundle's own files and nothing
// else. Every case is refused with a RenderError naming the kustomization
// file, and none runs a program or opens a connection.
func TestKustomizeConfined(t *testing.T) {
	fakes, marker := sentinels(t)
	addr, hits := listenForLeaks(t)
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	execFn := "apiVersion: x.dev/v1\nkind: Fn\nmetadata:\n  name: f\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: FAKES/fn\n"
	shFn := "apiVersion: x.dev/v1\nkind: Fn\nmetadata:\n  name: f\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: /bin/sh\n"
	containerFn := "apiVersion: x.dev/v1\nkind: Fn\nmetadata:\n  name: f\n  annotations:\n    config.kubernetes.io/function: |\n      container:\n        image: example.com/fn\n        network: true\n"
	tests := []struct {
		name          string
		kustomization string
		files         map[string]string
		file          string // the file the error names; kustomization.yaml if empty
		want          string // part of the message
	}{
		// Git: kustomize would clone these with `git`.
		{name: "scp user@host:repo", kustomization: "resources: [user@host:repo]\n", want: "remote reference"},
		{name: "scp github.com:org/repo", kustomization: "resources: [github.com:org/repo]\n", want: "remote reference"},
		{name: "upper-case GITHUB.COM with ref", kustomization: "resources: ['GITHUB.COM/org/repo?ref=v1']\n", want: "remote reference"},
		{name: "git:: prefix", kustomization: "resources: ['git::https://ADDR/org/repo.git']\n", want: "remote reference"},
		{name: "ssh URL", kustomization: "resources: ['ssh://git@ADDR/org/repo']\n", want: "remote reference"},
		{name: "user@host/path without a colon", kustomization: "resources: [user@host/org/repo]\n", want: "remote reference"},
		{name: "git@ base with a ref", kustomization: "bases: ['git@github.com:org/repo//base?ref=main']\n", want: "remote reference"},
		{name: "remote component", kustomization: "components: ['https://ADDR/org/repo.git//components/x']\n", want: "remote reference"},
		{name: "field name in other case", kustomization: "Resources: [github.com:org/repo]\n", want: "remote reference"},

		// HTTP: kustomize would fetch these with http.Get.
		{name: "https resource", kustomization: "resources: ['https://ADDR/x.yaml']\n", want: "remote reference"},
		{name: "http resource", kustomization: "resources: ['http://ADDR/x.yaml']\n", want: "remote reference"},
		{name: "patch path", kustomization: "resources: [templates/deployment.yaml]\npatches:\n- path: 'http://ADDR/p.yaml'\n", want: "remote reference"},
		{name: "patchesStrategicMerge path", kustomization: "resources: [templates/deployment.yaml]\npatchesStrategicMerge: ['http://ADDR/p.yaml']\n", want: "remote reference"},
		{name: "patchesJson6902 path", kustomization: "resources: [templates/deployment.yaml]\npatchesJson6902:\n- target: {group: apps, version: v1, kind: Deployment, name: web}\n  path: 'http://ADDR/p.json'\n", want: "remote reference"},
		{name: "replacements path", kustomization: "resources: [templates/deployment.yaml]\nreplacements:\n- path: 'http://ADDR/r.yaml'\n", want: "remote reference"},
		{name: "configMapGenerator file", kustomization: "configMapGenerator:\n- name: c\n  files: ['http://ADDR/f']\n", want: "remote reference"},
		{name: "configMapGenerator keyed file", kustomization: "configMapGenerator:\n- name: c\n  files: ['f=http://ADDR/f']\n", want: "remote reference"},
		{name: "configMapGenerator envs", kustomization: "configMapGenerator:\n- name: c\n  envs: ['http://ADDR/f.env']\n", want: "remote reference"},
		{name: "secretGenerator env", kustomization: "secretGenerator:\n- name: c\n  env: 'http://ADDR/f.env'\n", want: "remote reference"},
		{name: "crds", kustomization: "resources: [templates/deployment.yaml]\ncrds: ['http://ADDR/crd.json']\n", want: "remote reference"},
		{name: "configurations", kustomization: "resources: [templates/deployment.yaml]\nconfigurations: ['http://ADDR/c.yaml']\n", want: "remote reference"},

		// openapi: the schema is process-wide state in kyaml, so even a
		// bundle file or a builtin version is refused.
		{name: "openapi URL", kustomization: "resources: [templates/deployment.yaml]\nopenapi:\n  path: 'http://ADDR/schema.json'\n", want: "openapi"},
		{name: "openapi bundle file", kustomization: "resources: [templates/deployment.yaml]\nopenapi:\n  path: schema.json\n", files: map[string]string{"schema.json": "{}"}, want: "openapi"},
		{name: "openapi version", kustomization: "resources: [templates/deployment.yaml]\nopenapi:\n  version: v1.21.2\n", want: "openapi"},

		// Programs: Helm, plugins, exec and container functions.
		{name: "helmCharts", kustomization: "helmCharts:\n- name: minecraft\n  repo: 'http://ADDR/charts'\n", want: "Helm chart inflation"},
		{name: "helmChartInflationGenerator", kustomization: "helmChartInflationGenerator:\n- chartName: minecraft\n  chartRepoUrl: 'http://ADDR/charts'\n", want: "Helm chart inflation"},
		{name: "helmGlobals", kustomization: "resources: [templates/deployment.yaml]\nhelmGlobals:\n  chartHome: charts\n", want: "Helm chart inflation"},
		{name: "exec function generator from a file", kustomization: "generators: [fn.yaml]\n", files: map[string]string{"fn.yaml": execFn}, want: "generators (plugins)"},
		{name: "/bin/sh function generator inline", kustomization: "generators:\n- |\n" + indentKustomize(shFn), want: "generators (plugins)"},
		{name: "container function transformer", kustomization: "resources: [templates/deployment.yaml]\ntransformers: [fn.yaml]\n", files: map[string]string{"fn.yaml": containerFn}, want: "transformers (plugins)"},
		{name: "builtin transformer with a URL", kustomization: "resources: [templates/deployment.yaml]\ntransformers:\n- |\n" + indentKustomize("apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npath: 'http://ADDR/p.yaml'\n"), want: "transformers (plugins)"},
		{name: "exec function validator", kustomization: "resources: [templates/deployment.yaml]\nvalidators: [fn.yaml]\n", files: map[string]string{"fn.yaml": execFn}, want: "validators (plugins)"},

		// Files outside the bundle, or not in it.
		{name: "../ escaping", kustomization: "resources: [../../etc/passwd]\n", want: "outside the bundle"},
		{name: "absolute path", kustomization: "resources: [/etc/passwd]\n", want: "outside the bundle"},
		{name: "generator file absolute", kustomization: "configMapGenerator:\n- name: c\n  files: [/etc/passwd]\n", want: "outside the bundle"},
		{name: "generator keyed file escaping", kustomization: "configMapGenerator:\n- name: c\n  files: [passwd=../etc/passwd]\n", want: "outside the bundle"},
		{name: "patch escaping", kustomization: "resources: [templates/deployment.yaml]\npatches:\n- path: ../p.yaml\n", want: "outside the bundle"},
		{name: "missing file", kustomization: "resources: [nothere.yaml]\n", want: `"nothere.yaml" is not a file or folder of the bundle`},
		{name: "component that is a file", kustomization: "components: [templates/deployment.yaml]\n", want: "is not a folder of the bundle"},

		// Nested kustomizations are confined the same way.
		{name: "base with a remote resource", kustomization: "resources: [base]\n", files: map[string]string{"base/kustomization.yaml": "resources: [github.com:org/repo]\n"}, file: "base/kustomization.yaml", want: "remote reference"},
		{name: "component with a URL patch", kustomization: "resources: [templates/deployment.yaml]\ncomponents: [comp]\n", files: map[string]string{"comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- path: 'http://ADDR/p.yaml'\n"}, file: "comp/kustomization.yaml", want: "remote reference"},
		{name: "base escaping the bundle", kustomization: "resources: [base]\n", files: map[string]string{"base/kustomization.yaml": "resources: [../../etc/passwd]\n"}, file: "base/kustomization.yaml", want: "outside the bundle"},
		{name: "base with Helm", kustomization: "resources: [a/b]\n", files: map[string]string{"a/b/kustomization.yml": "helmCharts:\n- name: x\n"}, file: "a/b/kustomization.yml", want: "Helm chart inflation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fill := strings.NewReplacer("ADDR", addr, "FAKES", fakes).Replace
			files := kBundle(fill(tt.kustomization), nil)
			files["templates/cm.yaml"] = cm
			for p, c := range tt.files {
				files[p] = fill(c)
			}
			before := hits.Load()
			_, err := templates.Render(bundle(t, files), templates.Input{Composition: web})
			want := tt.file
			if want == "" {
				want = "kustomization.yaml"
			}
			var re *templates.RenderError
			if !errors.As(err, &re) || re.File != want || !strings.Contains(re.Msg, tt.want) {
				t.Errorf("err = %#v (%v), want a RenderError for %s containing %q", re, err, want, tt.want)
			}
			if ran, err := os.ReadFile(marker); err == nil {
				t.Errorf("kustomize ran a program: %s", ran)
				// Removed, or every later case would seem to have run one.
				if err := os.Remove(marker); err != nil {
					t.Fatal(err)
				}
			}
			if n := hits.Load() - before; n != 0 {
				t.Errorf("kustomize opened %d connection(s) to %s", n, addr)
			}
		})
	}

	// A bundle folder may be named like a git URL: it is read locally.
	t.Run("folder named like a git URL", func(t *testing.T) {
		files := kBundle("resources: ['github.com:org/repo']\n", map[string]string{
			"github.com:org/repo/kustomization.yaml": "resources: [cm.yaml]\n",
			"github.com:org/repo/cm.yaml":            cm,
		})
		objs, err := templates.Render(bundle(t, files), templates.Input{Composition: web})
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 1 || objs[0].GetName() != "x" {
			t.Errorf("got %s, want the ConfigMap of the folder", toYAML(t, objs))
		}
		if ran, err := os.ReadFile(marker); err == nil {
			t.Errorf("kustomize ran a program: %s", ran)
		}
	})
}

func indentKustomize(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

// TestKustomizationFields: confine knows every field of a kustomization.
// When kustomize adds one, this fails: decide whether kustomize reads a
// file, folder or URL from it (then handle it in locations, or refuse it
// in confine), and add it here.
func TestKustomizationFields(t *testing.T) {
	known := map[reflect.Type][]string{
		reflect.TypeFor[types.Kustomization](): {
			// Locations, rewritten by confine.
			"Resources", "Bases", "Components", "Crds", "Configurations", "Patches", "PatchesJson6902",
			"PatchesStrategicMerge", "Replacements", "ConfigMapGenerator", "SecretGenerator",
			// Refused.
			"OpenAPI", "HelmGlobals", "HelmCharts", "HelmChartInflationGenerator", "Generators", "Transformers", "Validators",
			// Data only.
			"TypeMeta", "MetaData", "NamePrefix", "NameSuffix", "Namespace", "CommonLabels", "Labels", "CommonAnnotations",
			"Images", "ImageTags", "Replicas", "Vars", "SortOptions", "GeneratorOptions", "BuildMetadata",
		},
		reflect.TypeFor[types.Patch]():            {"Path", "Patch", "Target", "Options"},
		reflect.TypeFor[types.ReplacementField](): {"Replacement", "Path"},
		reflect.TypeFor[types.Replacement]():      {"Source", "Targets", "SourceValue"},
		reflect.TypeFor[types.ConfigMapArgs]():    {"GeneratorArgs"},
		reflect.TypeFor[types.SecretArgs]():       {"GeneratorArgs", "Type"},
		reflect.TypeFor[types.GeneratorArgs]():    {"Namespace", "Name", "Behavior", "KvPairSources", "Options"},
		reflect.TypeFor[types.KvPairSources]():    {"LiteralSources", "FileSources", "EnvSources", "EnvSource"},
	}
	for typ, want := range known {
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Name)
		}
		sort.Strings(got)
		sort.Strings(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("fields of %s (-known +now):\n%s", typ, diff)
		}
	}
}
