# stencil's Makefile. Everything it needs is built from the Go module proxy by
# the project's own files: controller-gen runs with `go run` at the version
# pinned in go.mod, and the Kubernetes binaries are built by hack/k8s-assets.sh
# into a per-user cache (linked under bin/).

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
LDFLAGS := -X main.version=$(VERSION)
CONTROLLER_GEN := go run sigs.k8s.io/controller-tools/cmd/controller-gen
# golangci-lint is built from the version pinned in hack/tools/go.mod (a
# module of its own, so its dependencies stay out of go.mod) into bin/, one
# binary per version: a changed pin builds anew, an unchanged one is reused.
GOLANGCI_LINT_VERSION = $(shell awk '$$1 == "github.com/golangci/golangci-lint/v2" { print $$2 }' hack/tools/go.mod)
GOLANGCI_LINT = bin/golangci-lint-$(GOLANGCI_LINT_VERSION)
LINT_FLAGS ?=
GO_TEST_FLAGS ?=
# Where make push sends the controller image and what make release names.
IMAGE ?= ghcr.io/stencil-dev/stencil
PLATFORM ?= linux/amd64

.PHONY: all
all: build

##@ Generate

.PHONY: generate
generate: ## Generate deepcopy functions for api/ and the built-in Kubernetes API list (templates/kubeapi).
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	go run -C hack/k8s ./builtinapis $(CURDIR)/templates/kubeapi/zz_generated.builtinapis.go

.PHONY: manifests
manifests: ## Generate CRDs (config/crd), RBAC (config/rbac), the admission policy (config/admission) and the status schema published kinds share (publish/).
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	go run ./hack/statusschema config/crd/bases/stencil.dev_compositions.yaml publish/zz_generated.statusschema.go
	$(CONTROLLER_GEN) rbac:roleName=stencil-manager paths=./reconcile/... output:rbac:artifacts:config=config/rbac
	go run ./hack/accesspolicy config/admission/policy.yaml stencil-system

.PHONY: verify
verify: ## Fail when generated files are stale, code is unformatted, or vet or golangci-lint (make lint) complains.
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	cp -r api config templates/kubeapi/zz_generated.builtinapis.go publish/zz_generated.statusschema.go "$$tmp/"; \
	$(MAKE) --no-print-directory generate manifests >/dev/null; \
	if ! git diff --no-index --exit-code "$$tmp/api" api >/dev/null || ! git diff --no-index --exit-code "$$tmp/config" config >/dev/null || \
		! git diff --no-index --exit-code "$$tmp/zz_generated.builtinapis.go" templates/kubeapi/zz_generated.builtinapis.go >/dev/null || \
		! git diff --no-index --exit-code "$$tmp/zz_generated.statusschema.go" publish/zz_generated.statusschema.go >/dev/null; then \
		git diff --no-index "$$tmp/api" api; git diff --no-index "$$tmp/config" config; \
		git diff --no-index "$$tmp/zz_generated.builtinapis.go" templates/kubeapi/zz_generated.builtinapis.go; \
		git diff --no-index "$$tmp/zz_generated.statusschema.go" publish/zz_generated.statusschema.go; \
		echo "generated files were stale: run 'make generate manifests' and commit"; exit 1; \
	fi
	@out=$$(gofmt -l $$(git ls-files '*.go') ); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	go vet ./...
	cd hack/helmbench && go vet ./...
	$(MAKE) --no-print-directory lint
	@echo "verify: generated files, gofmt, go vet and golangci-lint are clean"

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (.golangci.yml) over the module and hack/helmbench; both are checked before it fails. LINT_FLAGS= adds flags.
	@rc=0; \
	$(GOLANGCI_LINT) run $(LINT_FLAGS) ./... || rc=1; \
	(cd hack/helmbench && $(CURDIR)/$(GOLANGCI_LINT) run $(LINT_FLAGS) ./...) || rc=1; \
	exit $$rc

$(GOLANGCI_LINT):
	@echo "building golangci-lint $(GOLANGCI_LINT_VERSION) from hack/tools (a few minutes when cold)"
	@test -n "$(GOLANGCI_LINT_VERSION)" || { echo "no golangci-lint version in hack/tools/go.mod"; exit 1; }
	@mkdir -p bin
	go build -C hack/tools -o $(CURDIR)/$@.tmp github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	mv $@.tmp $@

##@ Build

.PHONY: build
build: ## Build bin/stencil.
	go build -ldflags "$(LDFLAGS)" -o bin/stencil .

.PHONY: image
image: ## Build the controller image into bin/image (no Docker daemon, no base image; the same commit gives the same digest) and print its digest. PLATFORM=linux/arm64 for another.
	go run ./hack/image build -version $(VERSION) -platform $(PLATFORM) -out bin/image

.PHONY: push
push: image ## Push the image to IMAGE=REGISTRY/REPO (tagged with the version; credentials from ~/.docker/config.json) and print REGISTRY/REPO@DIGEST.
	go run ./hack/image push -layout bin/image -image $(IMAGE)

# What make release releases: config/default (members written as the
# parents' ServiceAccounts), or config/write-as-controller.
RELEASE_CONFIG ?= config/default

.PHONY: release
release: image ## Write dist/install.yaml (kubectl apply --server-side -f) and dist/kustomization.yaml (-k): $$RELEASE_CONFIG (config/default; config/write-as-controller writes as the controller) with the image as $$IMAGE@DIGEST.
	go run ./hack/release -image $(IMAGE) -layout bin/image -out dist -config $(RELEASE_CONFIG)

.PHONY: run
run: build ## Start a local cluster with the examples and run the controller (CLUSTER=existing: use $$KUBECONFIG).
	hack/run.sh

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver and etcd for envtest (cached).
	hack/k8s-assets.sh test

.PHONY: cluster-assets
cluster-assets: ## Build every binary of the local cluster (cached).
	hack/k8s-assets.sh all

.PHONY: install
install: ## Install the CRDs into the cluster of $$KUBECONFIG.
	kubectl apply --server-side -k config/crd

.PHONY: deploy
deploy: push release ## Push the image to IMAGE=REGISTRY/REPO and install stencil from this checkout (kubectl apply --server-side -k dist) into the cluster of $$KUBECONFIG.
	kubectl apply --server-side -k dist

##@ Test

.PHONY: test
test: ## Run unit, envtest (real kube-apiserver + etcd) and end-to-end (local cluster) tests, then hack/helmbench's against Helm's engine.
	@assets=$$(hack/k8s-assets.sh all); \
	echo "KUBEBUILDER_ASSETS=$$assets"; \
	KUBEBUILDER_ASSETS=$$assets go test -count=1 -timeout 30m $(GO_TEST_FLAGS) ./...
	$(MAKE) --no-print-directory test-helm

.PHONY: test-helm
test-helm: ## Run hack/helmbench's tests (a separate module importing Helm v4.3.1): functions, built-in objects and the real charts' suite rendered by both engines, and docs/helm.md's table checked against Helm's function list.
	cd hack/helmbench && go test -count=1 -timeout 20m $(GO_TEST_FLAGS) ./...

# make test-stress RUNS=5 COUNT=1 HOGS=2 STRESS_PKGS='./reconcile/ ./internal/e2e/'
RUNS ?= 5
COUNT ?= 1
HOGS ?=
STRESS_PKGS ?= $(shell grep -rl --include='*_test.go' -E 'testenv[.]Run|suite[.]Run|localCluster' . | grep -v '^./hack/' | xargs -r -n1 dirname | sort -u | sed 's|$$|/|')

.PHONY: test-stress
test-stress: ## Run the suites that talk to a real API server (envtest, end to end) RUNS times, each shuffled anew (-shuffle=on, COUNT=-count), beside a CPU hog on every core (HOGS=); report each failure with its seed. Not part of test.
	@assets=$$(hack/k8s-assets.sh node); \
	KUBEBUILDER_ASSETS=$$assets go run ./hack/stress -runs $(RUNS) -count $(COUNT) $(if $(HOGS),-hogs $(HOGS)) $(STRESS_PKGS)

.PHONY: test-install
test-install: ## Run only the install test: the release manifest on the local cluster, its Deployment on a kubelet node with containerd (needs root; installs Debian's containerd with apt-get).
	@assets=$$(hack/k8s-assets.sh node); \
	KUBEBUILDER_ASSETS=$$assets go test -count=1 -timeout 20m -run TestInstalledController -v ./internal/e2e/

.PHONY: fresh-check
fresh-check: ## Run the README's test command in a clone of HEAD with empty Go module and build caches, as a new machine would (built Kubernetes binaries reused).
	hack/fresh-check.sh

.PHONY: bench
bench: ## Run the benchmarks (rendering in process and in the sandbox, one reconcile pass on envtest), then stencil vs Helm's engine side by side, then make bench-versions N=1000 (a local cluster).
	go test -run '^$$' -bench . -benchmem ./templates/... ./internal/sandbox/
	@assets=$$(hack/k8s-assets.sh test); \
	KUBEBUILDER_ASSETS=$$assets go test -run '^$$' -bench . -benchmem ./reconcile/
	cd hack/helmbench && go run .
	$(MAKE) --no-print-directory bench-versions N=1000

# make bench-scale N=50 CHILDREN=5 CONCURRENCY=8 QPS=50 BURST=100 BENCH_FLAGS='-samples 40'
N ?= 1000
CHILDREN ?= 5
CONCURRENCY ?=
QPS ?=
BURST ?=
BENCH_FLAGS ?=

.PHONY: bench-scale
bench-scale: build ## Measure the controller at scale on a local cluster (not part of test): converge vs a bare SSA client, API requests, memory, status latency. N=, CHILDREN=, CONCURRENCY=, QPS=, BURST=, BENCH_FLAGS=.
	go run ./hack/benchscale -n $(N) -children $(CHILDREN) $(if $(CONCURRENCY),-concurrency $(CONCURRENCY)) \
		$(if $(QPS),-qps $(QPS)) $(if $(BURST),-burst $(BURST)) $(BENCH_FLAGS)

# make bench-rollout N=1000 BENCH_FLAGS='-rollout-soak 10s -rollout-namespaces 100'
.PHONY: bench-rollout
bench-rollout: build ## Measure a Bundle change rolled out to N parents on a local cluster: all at once, in waves of 1, 10, 100 and the rest, and a revision that never becomes Ready. N=, CONCURRENCY=, QPS=, BURST=, BENCH_FLAGS=.
	go run ./hack/benchscale -rollout -n $(N) $(if $(CONCURRENCY),-concurrency $(CONCURRENCY)) \
		$(if $(QPS),-qps $(QPS)) $(if $(BURST),-burst $(BURST)) $(BENCH_FLAGS)

# make bench-versions N=50 (the end-to-end demonstration) or N=1000 (the
# figures of docs/performance.md); VERSIONS_SAMPLES= LISTs in each version.
VERSIONS_SAMPLES ?= 100

.PHONY: bench-versions
bench-versions: build ## Show and measure a published kind's API evolving on a local cluster: N instances of AppService v1, v2 stored (0 child writes), v1 re-applied, LISTs in v1 (conversion webhook) vs v2, the storage migration, v1 removed, a values migration. Exits 1 when a check fails. N=, VERSIONS_SAMPLES=, BENCH_FLAGS=.
	go run ./hack/benchscale -versions -n $(N) -samples $(VERSIONS_SAMPLES) $(if $(CONCURRENCY),-concurrency $(CONCURRENCY)) \
		$(if $(QPS),-qps $(QPS)) $(if $(BURST),-burst $(BURST)) $(BENCH_FLAGS)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-16s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
