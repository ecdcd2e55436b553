package source_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/source"
	"github.com/stencil-dev/stencil/source/sourcetest"
)

// TestSourceRefusedAddress: the addresses a pull never reaches unless the
// cluster admin allows them, an IPv4 address hidden in an IPv6 one
// included, and public ones it reaches.
func TestSourceRefusedAddress(t *testing.T) {
	for _, tt := range []struct {
		addr string
		want string // a word of the reason; "" for a public address
	}{
		// Loopback, private, link-local.
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"::1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"192.168.1.1", "private"},
		{"fc00::1", "private"},
		{"fd00:ec2::254", "private"}, // AWS's IPv6 metadata service
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		// Unspecified, multicast, and other special ranges.
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "this-network"},
		{"100.100.100.200", "shared address space"}, // Alibaba Cloud's metadata service
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "reserved"},
		{"198.18.0.1", "benchmarking"},
		{"fec0::1", "site-local"},
		// IPv4 inside IPv6.
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:169.254.169.254", "link-local"},
		{"64:ff9b::a9fe:a9fe", "link-local"}, // NAT64 of 169.254.169.254
		{"2002:0a00:0001::1", "private"},     // 6to4 of 10.0.0.1
		{"::127.0.0.1", "IPv4-compatible"},
		// Public.
		{"8.8.8.8", ""},
		{"140.82.112.3", ""},
		{"2606:4700::1111", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
	} {
		t.Run(tt.addr, func(t *testing.T) {
			got := source.RefusedAddress(netip.MustParseAddr(tt.addr))
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("RefusedAddress(%s) = %q; want %q", tt.addr, got, tt.want)
			}
		})
	}
}

// TestSourcePrivateAddress: the controller's pulls (the zero Policy) reach
// no loopback or private address, by address or by a name that resolves
// to one (the check is made when the connection is, on the address
// dialled, so a name that resolves to a public address first and a
// private one next is refused too), and the server hears nothing; the
// admin's allowance opens exactly its ranges.
func TestSourcePrivateAddress(t *testing.T) {
	reg := sourcetest.NewRegistry(t, "robot", "s3cret")
	reg.Push(t, "charts/podinfo", "1.0.0", sourcetest.Chart(t, "podinfo", "1.0.0", podinfo))
	repo := sourcetest.NewRepo(t, "", "")
	repo.Add("podinfo", "1.0.0", sourcetest.Chart(t, "podinfo", "1.0.0", podinfo), nil)
	_, port, _ := strings.Cut(reg.Host, ":")
	creds := source.Credentials{CA: reg.CA, Username: "robot", Password: "s3cret"}
	byAddr := v1alpha1.BundleSource{OCI: reg.Ref("charts/podinfo", "1.0.0")}
	byName := v1alpha1.BundleSource{OCI: "oci://localhost:" + port + "/charts/podinfo:1.0.0"}
	chartRepo := v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "podinfo"}}
	only := func(cidrs ...string) source.Options {
		nets, err := source.ParseNetworks(cidrs)
		if err != nil {
			t.Fatal(err)
		}
		return source.Options{Policy: source.Policy{AllowedNetworks: nets}}
	}
	for _, tt := range []struct {
		name string
		spec v1alpha1.BundleSource
		opts source.Options
		ok   bool
	}{
		{"an address, by default", byAddr, source.Options{}, false},
		{"a name, by default", byName, source.Options{}, false},
		{"a chart repository, by default", chartRepo, source.Options{}, false},
		{"another range allowed", byAddr, only("10.0.0.0/8", "fd00::/8"), false},
		{"its address allowed", byAddr, only("127.0.0.1"), true},
		{"its range allowed", chartRepo, only("127.0.0.0/8"), true},
		{"every address allowed", byAddr, source.Options{Policy: source.AnyAddress()}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before, beforeRepo := reg.Requests(), repo.Requests()
			c := creds
			if tt.spec.ChartRepository != nil {
				c = source.Credentials{CA: repo.CA}
			}
			_, err := source.Fetch(ctx(t), tt.spec, c, tt.opts)
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantReason(t, err, source.ReasonURLRefused)
			if msg := err.Error(); !strings.Contains(msg, "loopback") || !strings.Contains(msg, "--allow-private-registries") {
				t.Errorf("message %q; want it to say the address is loopback and how an admin allows it", msg)
			}
			if reg.Requests() != before || repo.Requests() != beforeRepo {
				t.Errorf("the server heard %d requests; want none", reg.Requests()-before+repo.Requests()-beforeRepo)
			}
		})
	}
}

// TestSourceRedirects: a registry's redirect to another host is refused,
// but a blob's (the distribution spec's way to a CDN; the blob is checked
// against its digest, and no credential follows it), unless the admin
// allows other hosts; a chart repository's redirect to another host too.
// Whatever a redirect leads to is checked as an address as the named
// host is: a blob redirected to the clouds' metadata service is refused.
func TestSourceRedirects(t *testing.T) {
	tgz := sourcetest.Chart(t, "podinfo", "1.0.0", podinfo)
	storage := sourcetest.NewRegistry(t, "", "") // another host (port): the blobs' storage
	_, layer := storage.Push(t, "charts/podinfo", "1.0.0", tgz)
	reg := sourcetest.NewRegistry(t, "robot", "s3cret")
	reg.Push(t, "charts/podinfo", "1.0.0", tgz)
	reg.Push(t, "charts/manifest", "1.0.0", tgz)
	reg.Push(t, "charts/metadata", "1.0.0", tgz)
	reg.Redirect("/v2/charts/podinfo/blobs/", "https://"+storage.Host+"/v2/charts/podinfo/blobs/"+layer)
	reg.Redirect("/v2/charts/manifest/manifests/", "https://"+storage.Host+"/v2/charts/podinfo/manifests/1.0.0")
	reg.Redirect("/v2/charts/metadata/blobs/", "https://169.254.169.254/latest/meta-data/")
	creds := source.Credentials{CA: reg.CA, Username: "robot", Password: "s3cret"}
	allow := source.Options{Policy: source.Policy{AllowedNetworks: allowLoopback.AllowedNetworks, AllowRedirects: true}}

	t.Run("blob to another host", func(t *testing.T) {
		before := storage.Requests()
		if _, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: reg.Ref("charts/podinfo", "1.0.0")}, creds, loopback); err != nil {
			t.Fatal(err)
		}
		if storage.Requests() == before {
			t.Fatal("the blob was not redirected to its storage")
		}
		if got := storage.Authorizations(); len(got) != 0 {
			t.Errorf("the blob's storage received credentials: %q", got)
		}
	})
	t.Run("manifest to another host", func(t *testing.T) {
		spec := v1alpha1.BundleSource{OCI: reg.Ref("charts/manifest", "1.0.0")}
		_, err := source.Fetch(ctx(t), spec, creds, loopback)
		wantReason(t, err, source.ReasonURLRefused)
		if !strings.Contains(err.Error(), "--allow-source-redirects") {
			t.Errorf("message %q; want it to say how an admin allows it", err)
		}
		if _, err := source.Fetch(ctx(t), spec, creds, allow); err != nil {
			t.Errorf("with --allow-source-redirects: %v", err)
		}
	})
	t.Run("blob to the metadata service", func(t *testing.T) {
		_, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: reg.Ref("charts/metadata", "1.0.0")}, creds, allow)
		wantReason(t, err, source.ReasonURLRefused)
	})

	repo := sourcetest.NewRepo(t, "", "")
	other := sourcetest.NewRepo(t, "", "")
	other.Serve("/elsewhere/podinfo-1.0.0.tgz", tgz)
	repo.Add("podinfo", "1.0.0", tgz, nil)
	repo.Redirect("/charts/", other.URL+"/elsewhere/podinfo-1.0.0.tgz")
	repo.Add("cdn", "1.0.0", tgz, func(e *sourcetest.IndexEntry) { e.URLs = []string{other.URL + "/elsewhere/podinfo-1.0.0.tgz"} })
	repo.Add("metadata", "1.0.0", tgz, func(e *sourcetest.IndexEntry) { e.URLs = []string{"https://169.254.169.254/latest/meta-data/"} })
	rcreds := source.Credentials{CA: repo.CA}
	t.Run("chart repository, the metadata service", func(t *testing.T) {
		spec := v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "metadata"}}
		_, err := source.Fetch(ctx(t), spec, rcreds, allow)
		wantReason(t, err, source.ReasonURLRefused)
		if !strings.Contains(err.Error(), "169.254.169.254, a link-local") {
			t.Errorf("message %q; want it to name the address refused", err)
		}
	})
	for _, chart := range []string{"podinfo", "cdn"} {
		t.Run("chart repository, "+chart, func(t *testing.T) {
			spec := v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: chart}}
			_, err := source.Fetch(ctx(t), spec, rcreds, loopback)
			wantReason(t, err, source.ReasonURLRefused)
			a, err := source.Fetch(ctx(t), spec, rcreds, allow)
			if err != nil {
				t.Fatalf("with --allow-source-redirects: %v", err)
			}
			if !strings.HasPrefix(a.URL, repo.URL) && chart == "podinfo" || !strings.HasPrefix(a.URL, other.URL) && chart == "cdn" {
				t.Errorf("URL = %s", a.URL)
			}
		})
	}
}
