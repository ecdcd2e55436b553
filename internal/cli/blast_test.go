package cli_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
)

// appServiceFiles are appServiceBundle's files as a bundle folder.
var appServiceFiles = map[string]string{
	"values.yaml": "replicas: 1\nimage: nginx:1.27\nservice: true\n",
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Composition.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Composition.Name }}}
  template:
    metadata:
      labels: {app: {{ .Composition.Name }}}
    spec:
      containers:
      - name: app
        image: {{ .Values.image }}
`,
	"templates/service.yaml": `{{- if .Values.service }}
apiVersion: v1
kind: Service
metadata:
  name: {{ .Composition.Name }}
spec:
  selector: {app: {{ .Composition.Name }}}
  ports:
  - port: 80
{{- end }}
`,
}

// bundleFolder writes appServiceFiles, publishing AppService in group,
// changed by edit (a file set to "" is left out), into a folder named
// name.
func bundleFolder(t *testing.T, name, group string, edit map[string]string) string {
	t.Helper()
	files := maps.Clone(appServiceFiles)
	files["stencil.yaml"] = fmt.Sprintf("api:\n  group: %s\n  kind: AppService\n  version: v1\n", group)
	maps.Copy(files, edit)
	dir := filepath.Join(t.TempDir(), name)
	for p, c := range files {
		if c == "" {
			continue
		}
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// blastSetup is the cluster the blast-radius tests change a Bundle in:
// Bundle a (publishing AppService in group) used by Compositions a1 in
// ns1 and a2 in ns2 and by AppService svc in ns1, Bundle b used by
// Composition b1 in ns1, all applied by the controller.
type blastSetup struct {
	ns1, ns2, a, b, group string
}

func setUpBlast(t *testing.T) blastSetup {
	t.Helper()
	ctx := context.Background()
	k := controller.Client
	s := blastSetup{ns1: testenv.Namespace(t, k), ns2: testenv.Namespace(t, k)}
	s.a, s.b, s.group = "blast-a-"+s.ns1, "blast-b-"+s.ns1, s.ns1+".example.com"
	kubectl(t, publishedBundle(s.a, s.group), "apply", "-f", "-")
	kubectl(t, fmt.Sprintf(appServiceBundle, s.b), "apply", "-f", "-")
	t.Cleanup(func() {
		_ = k.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "appservices." + s.group}})
	})
	appServicesEstablished(t, k, s.group)
	svc := fmt.Sprintf("apiVersion: %s/v1\nkind: AppService\nmetadata:\n  name: svc\n  namespace: %s\nspec:\n  replicas: 1\n  team: api\n", s.group, s.ns1)
	// Established is not yet admitted: the policy's binding and
	// parameters for the kind reach the API server some time after.
	testenv.WaitKindChecked(t, k, objectOf(t, svc), 0)
	kubectl(t, compositionYAML(s.ns1, "a1", s.a, `{"replicas": 2, "team": "shop"}`)+"---\n"+
		compositionYAML(s.ns2, "a2", s.a, `{"replicas": 1}`)+"---\n"+
		compositionYAML(s.ns1, "b1", s.b, `{"replicas": 1}`)+"---\n"+svc,
		"apply", "-f", "-")
	for _, p := range []*unstructured.Unstructured{
		composition(s.ns1, "a1"), composition(s.ns2, "a2"), composition(s.ns1, "b1"),
		parentRef(s.group+"/v1", "AppService", s.ns1, "svc"),
	} {
		applied(t, k, p, 2)
	}
	return s
}

// lastLine is the summary line of the output.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestBlastRadius: diff --bundle DIR shows, for every Composition and
// instance that uses the Bundle, what its new version would change; the
// other Bundle's users are not touched.
func TestBlastRadius(t *testing.T) {
	s := setUpBlast(t)
	minReady := map[string]string{"templates/deployment.yaml": strings.Replace(appServiceFiles["templates/deployment.yaml"], "spec:\n  replicas:", "spec:\n  minReadySeconds: 5\n  replicas:", 1)}

	t.Run("an identical version changes nothing", func(t *testing.T) {
		out, errOut, code := stencil(t, "", "diff", "--bundle", bundleFolder(t, s.a, s.group, nil))
		want := "3 instances (2 Compositions, 1 AppService): 0 change, 3 unchanged\n"
		if code != 0 || out != want {
			t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0 and only %q", code, out, errOut, want)
		}
	})

	t.Run("a changed template changes every user", func(t *testing.T) {
		out, errOut, code := stencil(t, "", "diff", "--bundle", bundleFolder(t, s.a, s.group, minReady))
		ns1 := strings.Join([]string{
			"# " + s.ns1 + "/a1 (Composition)",
			"  Deployment/" + s.ns1 + "/a1 changed",
			"      spec.minReadySeconds (none) → 5",
			"# " + s.ns1 + "/svc (AppService)",
			"  Deployment/" + s.ns1 + "/svc changed",
			"      spec.minReadySeconds (none) → 5\n",
		}, "\n")
		ns2 := strings.Join([]string{
			"# " + s.ns2 + "/a2 (Composition)",
			"  Deployment/" + s.ns2 + "/a2 changed",
			"      spec.minReadySeconds (none) → 5\n",
		}, "\n")
		if s.ns2 < s.ns1 { // parents come sorted by namespace and name
			ns1, ns2 = ns2, ns1
		}
		want := ns1 + ns2 + "3 instances (2 Compositions, 1 AppService): 3 change, 0 unchanged\n"
		if code != 1 || out != want {
			t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 1 and:\n%s", code, out, errOut, want)
		}
		if strings.Contains(out, "b1") {
			t.Errorf("Bundle %s's Composition b1 is listed:\n%s", s.b, out)
		}
	})

	t.Run("-n narrows to one namespace", func(t *testing.T) {
		out, errOut, code := stencil(t, "", "diff", "--bundle", bundleFolder(t, s.a, s.group, minReady), "-n", s.ns2)
		if code != 1 || strings.Contains(out, s.ns1) || !strings.Contains(out, "# "+s.ns2+"/a2 (Composition)\n") ||
			lastLine(out) != "1 Composition: 1 change, 0 unchanged" {
			t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 1 and a2 alone", code, out, errOut)
		}
	})

	t.Run("-l narrows to labels", func(t *testing.T) {
		out, errOut, code := stencil(t, "", "diff", "--bundle", bundleFolder(t, s.a, s.group, minReady), "-l", "team=none")
		if code != 0 || out != "no Composition or instance uses Bundle "+s.a+" with labels team=none\n" {
			t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0 and no parent", code, out, errOut)
		}
	})

	t.Run("-o diff prints unified diffs", func(t *testing.T) {
		out, errOut, code := stencil(t, "", "diff", "--bundle", bundleFolder(t, s.a, s.group, minReady), "-n", s.ns2, "-o", "diff")
		for _, want := range []string{"# " + s.ns2 + "/a2 (Composition)\n", "--- live/Deployment/" + s.ns2 + "/a2\n", "+++ stencil/Deployment/" + s.ns2 + "/a2\n", "+  minReadySeconds: 5\n"} {
			if code != 1 || !strings.Contains(out, want) {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 1 and %q", code, out, errOut, want)
			}
		}
	})

	t.Run("a removed template prunes", func(t *testing.T) {
		out, errOut, code := stencil(t, "", "diff", "--bundle", bundleFolder(t, s.a, s.group, map[string]string{"templates/service.yaml": ""}), "-n", s.ns1)
		want := strings.Join([]string{
			"# " + s.ns1 + "/a1 (Composition)",
			"  Service/" + s.ns1 + "/a1 would be pruned",
			"# " + s.ns1 + "/svc (AppService)",
			"  Service/" + s.ns1 + "/svc would be pruned",
			"2 instances (1 Composition, 1 AppService): 2 change, 0 unchanged",
		}, "\n") + "\n"
		if code != 1 || out != want {
			t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 1 and:\n%s", code, out, errOut, want)
		}
	})

	t.Run("a failing render is reported, the others still diffed", func(t *testing.T) {
		team := map[string]string{"templates/deployment.yaml": strings.Replace(appServiceFiles["templates/deployment.yaml"],
			"  name: {{ .Composition.Name }}\n", "  name: {{ .Composition.Name }}\n  labels:\n    team: {{ required \"values.team is required\" .Values.team }}\n", 1)}
		out, errOut, code := stencil(t, "", "diff", "--bundle", bundleFolder(t, s.a, s.group, team))
		fails := s.ns2 + "/a2 templates/deployment.yaml:6: "
		for _, want := range []string{
			"# " + s.ns1 + "/a1 (Composition)\n  Deployment/" + s.ns1 + "/a1 changed\n      metadata.labels.team (none) → \"shop\"\n",
			"# " + s.ns1 + "/svc (AppService)\n  Deployment/" + s.ns1 + "/svc changed\n      metadata.labels.team (none) → \"api\"\n",
			"# " + s.ns2 + "/a2 (Composition)\n  would fail to render: templates/deployment.yaml:6: ",
			"3 instances (2 Compositions, 1 AppService): 2 change, 0 unchanged, 1 would fail to render: " + fails,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout:\n%s\nwant it to contain:\n%s", out, want)
			}
		}
		if code != 2 || !strings.Contains(lastLine(out), "values.team is required") {
			t.Errorf("exit %d, summary %q; want exit 2 and the template's message", code, lastLine(out))
		}
		if strings.Contains(errOut, "required") {
			t.Errorf("stderr %q: a render that fails is a result on stdout, not an error", errOut)
		}
	})

	t.Run("a child the API server refuses", func(t *testing.T) {
		badPort := map[string]string{"templates/service.yaml": strings.Replace(appServiceFiles["templates/service.yaml"], "port: 80", "port: 0", 1)}
		out, errOut, code := stencil(t, "", "diff", "--bundle", bundleFolder(t, s.a, s.group, badPort), "-n", s.ns1, "-l", "!nothing")
		want := "# " + s.ns1 + "/a1 (Composition)\n  would fail to apply: Service/" + s.ns1 + "/a1: Service \"a1\" is invalid: spec.ports[0].port: "
		if code != 2 || !strings.Contains(out, want) || !strings.Contains(lastLine(out), "2 instances (1 Composition, 1 AppService): 0 change, 0 unchanged, 2 would fail to apply: "+s.ns1+"/a1 Service/"+s.ns1+"/a1: Service \"a1\" is invalid: ") ||
			!strings.HasSuffix(lastLine(out), " ...") || strings.Contains(out, `Invalid value: 0`) {
			t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 2 and:\n%s", code, out, errOut, want)
		}
	})

	t.Run("a version publishing no kind leaves the instances alone", func(t *testing.T) {
		out, errOut, code := stencil(t, "", "diff", "--bundle", bundleFolder(t, s.a, s.group, map[string]string{"stencil.yaml": ""}), "-n", s.ns1)
		want := strings.Join([]string{
			"# " + s.ns1 + "/svc (AppService)",
			"  left alone: the new version of Bundle " + s.a + " does not publish " + s.group + "/v1 AppService: the controller leaves the instance and its children as they are",
			"2 instances (1 Composition, 1 AppService): 0 change, 1 unchanged, 1 left alone",
		}, "\n") + "\n"
		if code != 1 || out != want {
			t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 1 and:\n%s", code, out, errOut, want)
		}
	})

	t.Run("a new version of the published kind renders the instances at it", func(t *testing.T) {
		v2 := map[string]string{"stencil.yaml": fmt.Sprintf("api:\n  group: %s\n  kind: AppService\n  version: v2\n", s.group)}
		out, errOut, code := stencil(t, "", "diff", "--bundle", bundleFolder(t, s.a, s.group, v2), "-n", s.ns1)
		if want := "2 instances (1 Composition, 1 AppService): 0 change, 2 unchanged\n"; code != 0 || out != want {
			t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0 and %q", code, out, errOut, want)
		}
		// Its members are found at the version served now.
		v2["templates/service.yaml"] = ""
		out, errOut, code = stencil(t, "", "diff", "--bundle", bundleFolder(t, s.a, s.group, v2), "-n", s.ns1)
		if code != 1 || !strings.Contains(out, "# "+s.ns1+"/svc (AppService)\n  Service/"+s.ns1+"/svc would be pruned\n") {
			t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 1 and svc's Service pruned", code, out, errOut)
		}
	})

	t.Run("-f bundle.yaml --bundle-name", func(t *testing.T) {
		packed, errOut, code := stencil(t, "", "bundle", "pack", bundleFolder(t, "v2", s.group, minReady))
		if code != 0 {
			t.Fatalf("bundle pack: exit %d\n%s", code, errOut)
		}
		file := filepath.Join(t.TempDir(), "bundle.yaml")
		if err := os.WriteFile(file, []byte(packed), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := stencil(t, "", "diff", "-f", file, "--bundle-name", s.a, "-n", s.ns2)
		if code != 1 || lastLine(out) != "1 Composition: 1 change, 0 unchanged" || !strings.Contains(out, "  Deployment/"+s.ns2+"/a2 changed\n      spec.minReadySeconds (none) → 5\n") {
			t.Errorf("diff -f bundle.yaml --bundle-name: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		out, errOut, code = stencil(t, packed, "diff", "-f", "-", "--bundle-name", s.a, "-n", s.ns2)
		if code != 1 || lastLine(out) != "1 Composition: 1 change, 0 unchanged" {
			t.Errorf("diff -f - --bundle-name: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		// Without --bundle-name the manifest's own name (v2) is the
		// Bundle it would replace: nothing uses it.
		out, errOut, code = stencil(t, "", "diff", "-f", file)
		if code != 0 || out != "no Composition or instance uses Bundle v2\n" || !strings.Contains(errOut, "Bundle v2 is not in the cluster") {
			t.Errorf("diff -f bundle.yaml: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
	})

	// stencil's admission policy refuses an annotation the controller
	// could not read (an instance admitted before the policy can still
	// carry one: TestInstanceTargetBadAnnotation).
	t.Run("an instance annotation the controller cannot read", func(t *testing.T) {
		cmd := exec.Command("kubectl", "annotate", "-n", s.ns1, "appservices."+s.group+"/svc", "stencil.dev/prune=maybe", "--kubeconfig", kubeconfig)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "ValidatingAdmissionPolicy 'stencil-access'") || !strings.Contains(string(out), "stencil.dev/prune") {
			t.Errorf("kubectl annotate stencil.dev/prune=maybe: %v\n%s\nwant it refused by stencil's admission policy, naming the annotation", err, out)
		}
	})
}

// TestBlastFlags: what diff refuses before it reads the cluster, with exit
// status 2 and the flag named.
func TestBlastFlags(t *testing.T) {
	comp := compositionYAML("default", "web", "b", "{}")
	bundle := "apiVersion: stencil.dev/v1alpha1\nkind: Bundle\nmetadata:\n  name: b\nspec:\n  files: {}\n"
	tests := []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"neither -f nor --bundle", "", nil, "diff needs -f FILE"},
		{"an unknown flag", "", []string{"--bundel", "."}, "unknown flag: --bundel"},
		{"--bundle-name with Compositions", comp, []string{"-f", "-", "--bundle-name", "b"}, "--bundle-name is for the blast radius of a Bundle change"},
		{"--selector with Compositions", comp, []string{"-f", "-", "-l", "a=b"}, "--selector is for the blast radius of a Bundle change"},
		{"a Bundle beside a Composition", bundle + "---\n" + comp, []string{"-f", "-"}, "holds a Bundle and 1 other objects"},
		{"a Bundle in -f and --bundle", bundle, []string{"-f", "-", "--bundle", "."}, "give the new version once"},
		{"an unknown output", "", []string{"--bundle", ".", "-o", "yaml"}, `--output "yaml": want changes or diff`},
		{"a bad selector", "", []string{"--bundle", ".", "-l", "a b"}, "--selector"},
		{"a missing folder", "", []string{"--bundle", "no/such/dir"}, "no/such/dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := stencil(t, tt.stdin, append([]string{"diff"}, tt.args...)...)
			if code == 0 || code == 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, errOut, tt.want)
			}
		})
	}
}

// TestBlastRadiusWavePlan: for a Bundle that rolls out in waves, diff
// --bundle prints each wave's parents and changes, in the order the
// controller's rollout would move them; a pinned parent is not moved.
func TestBlastRadiusWavePlan(t *testing.T) {
	ctx := context.Background()
	k := controller.Client
	ns := testenv.Namespace(t, k)
	name := "plan-" + ns
	kubectl(t, fmt.Sprintf(appServiceBundle, name), "apply", "-f", "-")
	var docs []string
	for i := range 4 {
		docs = append(docs, compositionYAML(ns, fmt.Sprintf("p%d", i), name, `{"replicas": 1}`))
	}
	kubectl(t, strings.Join(docs, "---\n"), "apply", "-f", "-")
	var rev string
	eventually(t, "the Bundle's revision recorded and every parent on it", func() (bool, error) {
		b := &v1alpha1.Bundle{}
		if err := k.Get(ctx, client.ObjectKey{Name: name}, b); err != nil || len(b.Status.Rollouts) == 0 {
			return false, err
		}
		rev = b.Status.Rollouts[0].Stable
		return b.Status.Rollouts[0].Updated == 4, fmt.Errorf("%+v", b.Status.Rollouts)
	})
	kubectl(t, "", "patch", "-n", ns, "composition", "p3", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"bundleRevision":%q}}`, rev))

	dir := bundleFolder(t, name, "", map[string]string{
		"stencil.yaml":              "rollout:\n  strategy: Waves\n  batch: {size: 1, factor: 2}\n",
		"templates/deployment.yaml": strings.Replace(appServiceFiles["templates/deployment.yaml"], "spec:\n  replicas:", "spec:\n  minReadySeconds: 5\n  replicas:", 1),
	})
	out, errOut, code := stencil(t, "", "diff", "--bundle", dir, "-n", ns)
	for _, want := range []string{"## pinned (1): not moved\n# " + ns + "/p3 (Composition)\n  pinned to revision " + rev + ": not moved\n",
		"## wave 1/2 (1 parent)\n", "## wave 2/2 (2 parents)\n", "3 change, 0 unchanged, 1 pinned"} {
		if !strings.Contains(out, want) {
			t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant %q", code, out, errOut, want)
		}
	}
	if i, j := strings.Index(out, "wave 1/2"), strings.Index(out, "wave 2/2"); i < 0 || j < i {
		t.Errorf("waves out of order:\n%s", out)
	}
}

// TestBlastRadiusNarrowing: a new version that narrows the Bundle's
// permissions binds the parents it does not move, as the controller binds
// them: a pinned parent whose revision writes where the new version no
// longer allows would fail to render; a parent whose values the new schema
// refuses would stall (not stay on its revision) unless the Bundle allows
// holding.
func TestBlastRadiusNarrowing(t *testing.T) {
	ctx := context.Background()
	k := controller.Client
	ns, other := testenv.Namespace(t, k), testenv.Namespace(t, k)
	name := "narrow-" + ns
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{{ .Composition.Name }}\ndata: {}\n"
	cross := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cross-{{ .Composition.Name }}\n  namespace: " + other + "\ndata: {}\n"
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.BundleSpec{
		Files:       map[string]string{"templates/cm.yaml": cm, "templates/cross.yaml": cross},
		Permissions: v1alpha1.BundlePermissions{Namespaces: []string{"*"}},
	}}
	if err := k.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(ctx, b) })
	kubectl(t, compositionYAML(ns, "pinned", name, `{}`)+"---\n"+compositionYAML(ns, "refused", name, `{}`), "apply", "-f", "-")
	var rev string
	eventually(t, "the Bundle's revision recorded and both parents on it", func() (bool, error) {
		if err := k.Get(ctx, client.ObjectKey{Name: name}, b); err != nil || len(b.Status.Rollouts) == 0 {
			return false, err
		}
		rev = b.Status.Rollouts[0].Stable
		return b.Status.Rollouts[0].Updated == 2, fmt.Errorf("%+v", b.Status.Rollouts)
	})
	kubectl(t, "", "patch", "-n", ns, "composition", "pinned", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"bundleRevision":%q}}`, rev))

	dir := filepath.Join(t.TempDir(), name)
	for p, c := range map[string]string{
		"templates/cm.yaml":  cm,
		"values.schema.yaml": "type: object\nrequired: [port]\nproperties:\n  port: {type: integer}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := stencil(t, "", "diff", "--bundle", dir, "-n", ns)
	for _, want := range []string{
		"# " + ns + "/pinned (Composition)\n  would fail to render: revision " + rev + ", which it stays on, within the new version's spec.permissions and spec.crds: refused ConfigMap/" + other + "/cross-pinned",
		"# " + ns + "/refused (Composition)\n  would fail to render: the new version refuses its values: ",
		"it would stall (ValuesRefused",
	} {
		if code != 2 || !strings.Contains(out, want) {
			t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 2 and %q", code, out, errOut, want)
		}
	}
}
