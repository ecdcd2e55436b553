package source_test

import (
	"archive/tar"
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/source"
	"github.com/stencil-dev/stencil/source/sourcetest"
)

// allowLoopback is the cluster admin's allowance the tests' registries
// need: they listen on loopback, which the zero Policy refuses.
var allowLoopback = source.Policy{AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}

// loopback are the options of a pull from a test's registry.
var loopback = source.Options{Policy: allowLoopback}

var podinfo = map[string]string{
	"values.yaml":           "replicas: 1\n",
	"templates/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
	"charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
}

// wantReason fails t unless err is an *source.Error of reason.
func wantReason(t *testing.T, err error, reason string) {
	t.Helper()
	var serr *source.Error
	if !errors.As(err, &serr) {
		t.Fatalf("err = %v; want a *source.Error of reason %s", err, reason)
	}
	if serr.Reason != reason {
		t.Fatalf("reason = %s (%v); want %s", serr.Reason, err, reason)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// blob is a file that is not UTF-8 (bzip2's magic, then invalid bytes).
const blob = "BZh91AY&SY\xff\xfe\x00\x80"

func TestSourceOCI(t *testing.T) {
	reg := sourcetest.NewRegistry(t, "", "")
	sub := sourcetest.Chart(t, "sub2", "0.2.0", map[string]string{"templates/s.yaml": "kind: ConfigMap\n"})
	// A binary file among .Files, as kube-prometheus-stack's
	// files/crds.bz2: kept byte for byte.
	files := map[string]string{"charts/sub2-0.2.0.tgz": string(sub), "files/blob.bin": blob}
	for p, c := range podinfo {
		files[p] = c
	}
	tgz := sourcetest.Chart(t, "podinfo", "6.5.0", files)
	manifest, layer := reg.Push(t, "charts/podinfo", "6.5.0", tgz)
	creds := source.Credentials{CA: reg.CA}

	t.Run("by tag", func(t *testing.T) {
		a, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: reg.Ref("charts/podinfo", "6.5.0")}, creds, loopback)
		if err != nil {
			t.Fatal(err)
		}
		if a.Digest != layer || a.ManifestDigest != manifest || a.Version != "6.5.0" || a.Size != int64(len(tgz)) {
			t.Errorf("artifact = %s %s %s %d; want %s %s 6.5.0 %d", a.Digest, a.ManifestDigest, a.Version, a.Size, layer, manifest, len(tgz))
		}
		if want := reg.Ref("charts/podinfo", manifest); a.URL != want {
			t.Errorf("URL = %s; want %s", a.URL, want)
		}
		for _, p := range []string{"Chart.yaml", "values.yaml", "templates/cm.yaml", "charts/sub/Chart.yaml", "charts/sub2/templates/s.yaml"} {
			if _, ok := a.Files[p]; !ok {
				t.Errorf("no file %s in %v", p, keys(a.Files))
			}
		}
		if _, ok := a.Files["charts/sub2-0.2.0.tgz"]; ok {
			t.Errorf("the subchart archive is not unpacked")
		}
		if got := a.Files["files/blob.bin"]; got != blob {
			t.Errorf("files/blob.bin: %q, want the chart's bytes %q", got, blob)
		}
		if len(a.RemoteOptions) == 0 {
			t.Errorf("no remote options exposed")
		}
	})
	t.Run("by digest", func(t *testing.T) {
		a, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: reg.Ref("charts/podinfo", manifest)}, creds, loopback)
		if err != nil {
			t.Fatal(err)
		}
		if a.Digest != layer {
			t.Errorf("digest = %s; want %s", a.Digest, layer)
		}
	})
	t.Run("unknown tag", func(t *testing.T) {
		_, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: reg.Ref("charts/podinfo", "9.9.9")}, creds, loopback)
		wantReason(t, err, source.ReasonNotFound)
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		_, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: reg.Ref("charts/podinfo", "6.5.0")}, source.Credentials{}, loopback)
		wantReason(t, err, source.ReasonPullFailed)
	})
	t.Run("too large", func(t *testing.T) {
		_, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: reg.Ref("charts/podinfo", "6.5.0")}, creds, source.Options{MaxSize: int64(len(tgz)) - 1, Policy: allowLoopback})
		wantReason(t, err, source.ReasonTooLarge)
	})
	t.Run("cache", func(t *testing.T) {
		cache := source.NewCache(0)
		if _, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: reg.Ref("charts/podinfo", "6.5.0")}, creds, source.Options{Cache: cache, Policy: allowLoopback}); err != nil {
			t.Fatal(err)
		}
		if _, ok := cache.Get(layer); !ok {
			t.Fatalf("the chart is not cached by its digest %s", layer)
		}
	})
}

func TestSourceOCIDigestMismatch(t *testing.T) {
	reg := sourcetest.NewRegistry(t, "", "")
	tgz := sourcetest.Chart(t, "podinfo", "6.5.0", podinfo)
	_, layer := reg.Push(t, "charts/podinfo", "6.5.0", tgz)
	tampered := append([]byte(nil), tgz...)
	tampered[len(tampered)-1] ^= 0xff
	reg.Tamper(layer, tampered)
	_, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: reg.Ref("charts/podinfo", "6.5.0")}, source.Credentials{CA: reg.CA}, loopback)
	wantReason(t, err, source.ReasonDigestMismatch)
}

func TestSourceOCINotAChart(t *testing.T) {
	reg := sourcetest.NewRegistry(t, "", "")
	_, _ = reg.Push(t, "charts/podinfo", "1.0.0", []byte("not a tgz"))
	_, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: reg.Ref("charts/podinfo", "1.0.0")}, source.Credentials{CA: reg.CA}, loopback)
	wantReason(t, err, source.ReasonInvalidChart)
}

func TestSourceUnauthorized(t *testing.T) {
	reg := sourcetest.NewRegistry(t, "admin", "s3cret")
	tgz := sourcetest.Chart(t, "podinfo", "6.5.0", podinfo)
	reg.Push(t, "charts/podinfo", "6.5.0", tgz)
	spec := v1alpha1.BundleSource{OCI: reg.Ref("charts/podinfo", "6.5.0")}
	t.Run("oci bad password", func(t *testing.T) {
		_, err := source.Fetch(ctx(t), spec, source.Credentials{CA: reg.CA, Username: "admin", Password: "wrong"}, loopback)
		wantReason(t, err, source.ReasonUnauthorized)
		if strings.Contains(err.Error(), "wrong") {
			t.Errorf("the error quotes the password: %v", err)
		}
	})
	t.Run("oci no credentials", func(t *testing.T) {
		_, err := source.Fetch(ctx(t), spec, source.Credentials{CA: reg.CA}, loopback)
		wantReason(t, err, source.ReasonUnauthorized)
	})
	t.Run("oci good password", func(t *testing.T) {
		if _, err := source.Fetch(ctx(t), spec, source.Credentials{CA: reg.CA, Username: "admin", Password: "s3cret"}, loopback); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("oci dockerconfigjson", func(t *testing.T) {
		cfg := `{"auths":{"` + reg.Host + `":{"username":"admin","password":"s3cret"}}}`
		if _, err := source.Fetch(ctx(t), spec, source.Credentials{CA: reg.CA, DockerConfig: []byte(cfg)}, loopback); err != nil {
			t.Fatal(err)
		}
	})
	repo := sourcetest.NewRepo(t, "admin", "s3cret")
	repo.Add("podinfo", "6.5.0", tgz, nil)
	rspec := v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "podinfo"}}
	t.Run("repository bad password", func(t *testing.T) {
		_, err := source.Fetch(ctx(t), rspec, source.Credentials{CA: repo.CA, Username: "admin", Password: "wrong"}, loopback)
		wantReason(t, err, source.ReasonUnauthorized)
	})
	t.Run("repository good password", func(t *testing.T) {
		if _, err := source.Fetch(ctx(t), rspec, source.Credentials{CA: repo.CA, Username: "admin", Password: "s3cret"}, loopback); err != nil {
			t.Fatal(err)
		}
	})
}

func TestSourceUnreachable(t *testing.T) {
	reg := sourcetest.NewRegistry(t, "", "")
	host, ca := reg.Host, reg.CA
	reg.Close()
	_, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: "oci://" + host + "/charts/podinfo:1.0.0"}, source.Credentials{CA: ca}, loopback)
	wantReason(t, err, source.ReasonPullFailed)
	_, err = source.Fetch(ctx(t), v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: "https://" + host, Chart: "podinfo"}}, source.Credentials{CA: ca}, loopback)
	wantReason(t, err, source.ReasonPullFailed)
}

func TestSourceChartRepository(t *testing.T) {
	repo := sourcetest.NewRepo(t, "", "")
	for _, v := range []string{"1.0.0", "1.2.0", "1.2.5", "2.0.0", "2.1.0-rc.1"} {
		repo.Add("podinfo", v, sourcetest.Chart(t, "podinfo", v, podinfo), nil)
	}
	creds := source.Credentials{CA: repo.CA}
	for _, tt := range []struct{ version, want string }{
		{"", "2.0.0"}, // newest stable
		{"1.2.0", "1.2.0"},
		{"~1.2", "1.2.5"},
		{">=1.0.0 <2.0.0", "1.2.5"},
		{"^2.1.0-0", "2.1.0-rc.1"},
	} {
		t.Run("version "+tt.version, func(t *testing.T) {
			spec := v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL + "/", Chart: "podinfo", Version: tt.version}}
			a, err := source.Fetch(ctx(t), spec, creds, loopback)
			if err != nil {
				t.Fatal(err)
			}
			if a.Version != tt.want {
				t.Errorf("version = %s; want %s", a.Version, tt.want)
			}
			if want := repo.URL + "/charts/podinfo-" + tt.want + ".tgz"; a.URL != want {
				t.Errorf("URL = %s; want %s", a.URL, want)
			}
		})
	}
	t.Run("no match", func(t *testing.T) {
		spec := v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "podinfo", Version: ">=3"}}
		_, err := source.Fetch(ctx(t), spec, creds, loopback)
		wantReason(t, err, source.ReasonNotFound)
	})
	t.Run("unknown chart", func(t *testing.T) {
		spec := v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "nginx"}}
		_, err := source.Fetch(ctx(t), spec, creds, loopback)
		wantReason(t, err, source.ReasonNotFound)
	})
	t.Run("pinned", func(t *testing.T) {
		spec := v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "podinfo", Version: "1.x"}}
		first, err := source.Fetch(ctx(t), spec, creds, loopback)
		if err != nil {
			t.Fatal(err)
		}
		repo.Add("podinfo", "1.3.0", sourcetest.Chart(t, "podinfo", "1.3.0", podinfo), nil)
		pin := &v1alpha1.SourceStatus{URL: first.URL, Version: first.Version, Digest: first.Digest, ResolvedAt: metav1.Now()}
		again, err := source.Fetch(ctx(t), spec, creds, source.Options{Pin: pin, Policy: allowLoopback})
		if err != nil {
			t.Fatal(err)
		}
		if again.Version != "1.2.5" || again.Digest != first.Digest {
			t.Errorf("pinned pull = %s %s; want 1.2.5 %s", again.Version, again.Digest, first.Digest)
		}
		resolved, err := source.Fetch(ctx(t), spec, creds, loopback)
		if err != nil {
			t.Fatal(err)
		}
		if resolved.Version != "1.3.0" {
			t.Errorf("resolved = %s; want 1.3.0", resolved.Version)
		}
	})
}

func TestSourceChartRepositoryRefused(t *testing.T) {
	repo := sourcetest.NewRepo(t, "", "")
	other := sourcetest.NewRepo(t, "", "")
	tgz := sourcetest.Chart(t, "podinfo", "1.0.0", podinfo)
	other.Serve("/podinfo-1.0.0.tgz", tgz)
	repo.Add("elsewhere", "1.0.0", tgz, func(e *sourcetest.IndexEntry) { e.URLs = []string{other.URL + "/podinfo-1.0.0.tgz"} })
	repo.Add("clear", "1.0.0", tgz, func(e *sourcetest.IndexEntry) { e.URLs = []string{"http://" + repo.Host + "/charts/clear-1.0.0.tgz"} })
	repo.Add("up", "1.0.0", tgz, func(e *sourcetest.IndexEntry) { e.URLs = []string{"//" + other.Host + "/podinfo-1.0.0.tgz"} })
	repo.Add("mismatch", "1.0.0", tgz, func(e *sourcetest.IndexEntry) { e.Digest = strings.Repeat("0", 64) })
	big := sourcetest.Chart(t, "big", "1.0.0", map[string]string{"values.yaml": strings.Repeat("x: y\n", 1<<16)})
	repo.Add("big", "1.0.0", big, nil)
	creds := source.Credentials{CA: repo.CA}
	for _, tt := range []struct{ chart, reason string }{
		{"elsewhere", source.ReasonURLRefused},
		{"clear", source.ReasonURLRefused},
		{"up", source.ReasonURLRefused},
		{"mismatch", source.ReasonDigestMismatch},
	} {
		t.Run(tt.chart, func(t *testing.T) {
			_, err := source.Fetch(ctx(t), v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: tt.chart}}, creds, loopback)
			wantReason(t, err, tt.reason)
		})
	}
	t.Run("too large", func(t *testing.T) {
		_, err := source.Fetch(ctx(t), v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "big"}}, creds, source.Options{MaxSize: 100, Policy: allowLoopback})
		wantReason(t, err, source.ReasonTooLarge)
	})
}

// TestSourceHostileArchive: a chart archive is unpacked with the
// confinement of a folder bundle's charts/*.tgz.
func TestSourceHostileArchive(t *testing.T) {
	reg := sourcetest.NewRegistry(t, "", "")
	chartYAML := sourcetest.Entry{Name: "evil/Chart.yaml", Body: "apiVersion: v2\nname: evil\nversion: 1.0.0\n"}
	for _, tt := range []struct {
		name  string
		entry sourcetest.Entry
	}{
		{"dot dot", sourcetest.Entry{Name: "evil/../../etc/passwd", Body: "x"}},
		{"absolute", sourcetest.Entry{Name: "/etc/passwd", Body: "x"}},
		{"symlink", sourcetest.Entry{Name: "evil/templates/link.yaml", Type: tar.TypeSymlink, Link: "/etc/passwd"}},
		{"hard link", sourcetest.Entry{Name: "evil/templates/link.yaml", Type: tar.TypeLink, Link: "evil/Chart.yaml"}},
		{"second chart", sourcetest.Entry{Name: "other/templates/a.yaml", Body: "x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tag := strings.ReplaceAll(tt.name, " ", "-")
			reg.Push(t, "charts/evil", tag, sourcetest.TarGz(t, chartYAML, tt.entry))
			_, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: reg.Ref("charts/evil", tag)}, source.Credentials{CA: reg.CA}, loopback)
			wantReason(t, err, source.ReasonInvalidChart)
		})
	}
	t.Run("no Chart.yaml", func(t *testing.T) {
		reg.Push(t, "charts/evil", "none", sourcetest.TarGz(t, sourcetest.Entry{Name: "evil/values.yaml", Body: "a: 1\n"}))
		_, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: reg.Ref("charts/evil", "none")}, source.Credentials{CA: reg.CA}, loopback)
		wantReason(t, err, source.ReasonInvalidChart)
	})
}

func TestSourceCacheBound(t *testing.T) {
	c := source.NewCache(100)
	c.Add(&source.Artifact{Digest: "sha256:a", Files: map[string]string{"a": strings.Repeat("x", 60)}})
	c.Add(&source.Artifact{Digest: "sha256:b", Files: map[string]string{"b": strings.Repeat("x", 30)}})
	if _, ok := c.Get("sha256:a"); !ok {
		t.Fatal("a is gone too early")
	}
	c.Add(&source.Artifact{Digest: "sha256:c", Files: map[string]string{"c": strings.Repeat("x", 30)}})
	if _, ok := c.Get("sha256:b"); ok {
		t.Error("b, the least recently used, is still kept past the bound")
	}
	if _, ok := c.Get("sha256:a"); !ok {
		t.Error("a, used recently, is gone")
	}
	c.Add(&source.Artifact{Digest: "sha256:d", Files: map[string]string{"d": strings.Repeat("x", 200)}})
	if _, ok := c.Get("sha256:d"); ok {
		t.Error("a chart over the whole bound is kept")
	}
	c.Remove("sha256:a")
	if _, ok := c.Get("sha256:a"); ok {
		t.Error("a chart removed is still kept")
	}
	c.Add(&source.Artifact{Digest: "sha256:e", Files: map[string]string{"e": strings.Repeat("x", 65)}})
	if _, ok := c.Get("sha256:c"); !ok {
		t.Error("a removed chart's bytes are still counted")
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSourcePinOutsideSource: a pin (status.source, which anyone who may
// write a Bundle's status could change) is pulled only from where the
// spec points, and an index URL on the repository's own host is fine.
func TestSourcePinOutsideSource(t *testing.T) {
	reg := sourcetest.NewRegistry(t, "", "")
	m, l := reg.Push(t, "charts/other", "1.0.0", sourcetest.Chart(t, "other", "1.0.0", podinfo))
	_, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: reg.Ref("charts/podinfo", "1.0.0")}, source.Credentials{CA: reg.CA},
		source.Options{Pin: &v1alpha1.SourceStatus{URL: reg.Ref("charts/other", m), Digest: l}, Policy: allowLoopback})
	wantReason(t, err, source.ReasonURLRefused)

	repo := sourcetest.NewRepo(t, "", "")
	other := sourcetest.NewRepo(t, "", "")
	tgz := sourcetest.Chart(t, "podinfo", "1.0.0", podinfo)
	repo.Add("podinfo", "1.0.0", tgz, func(e *sourcetest.IndexEntry) { e.URLs = []string{repo.URL + "/charts/podinfo-1.0.0.tgz"} })
	spec := v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "podinfo"}}
	a, err := source.Fetch(ctx(t), spec, source.Credentials{CA: repo.CA}, loopback)
	if err != nil {
		t.Fatalf("an absolute URL on the repository's host: %v", err)
	}
	_, err = source.Fetch(ctx(t), spec, source.Credentials{CA: repo.CA}, source.Options{Pin: &v1alpha1.SourceStatus{URL: other.URL + "/x.tgz", Digest: a.Digest}, Policy: allowLoopback})
	wantReason(t, err, source.ReasonURLRefused)
}
