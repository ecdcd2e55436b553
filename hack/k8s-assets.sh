#!/usr/bin/env bash
# k8s-assets.sh builds the real Kubernetes control-plane binaries from the Go
# module proxy and links them into bin/k8s/<version>/ of this clone.
#
#   hack/k8s-assets.sh test   kube-apiserver and etcd (what envtest needs)
#   hack/k8s-assets.sh all    also kube-controller-manager, kube-scheduler, kwok
#   hack/k8s-assets.sh node   also the kubelet (the install test's node, hack/node.sh)
#
# The binaries live in a per-user cache outside the clone
# ($STENCIL_CACHE, default ~/.cache/stencil/k8s/<version>), so a fresh clone on
# the same machine (as CI is) reuses them; what is already built is skipped.
# A cold build of kube-apiserver takes about 8 minutes on 2 cores. The last
# line printed is the folder to use as KUBEBUILDER_ASSETS.
set -euo pipefail

K8S_VERSION=1.36.3
ETCD_VERSION=3.6.16
KWOK_VERSION=0.8.0

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${STENCIL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stencil}/k8s/$K8S_VERSION
out=$root/bin/k8s/$K8S_VERSION
mode=${1:-test}

log() { printf '[k8s-assets] %s\n' "$*" >&2; }

# build NAME MODULE_DIR PACKAGE VERSION_TAG builds PACKAGE inside the tools
# module MODULE_DIR into the cache, printing progress while it compiles.
build() {
  local name=$1 dir=$2 pkg=$3 stamp=$4
  local bin=$cache/$name
  if [[ -x $bin && -f $bin.version && $(cat "$bin.version") == "$stamp" ]]; then
    log "$name $stamp: cached at $bin"
    return
  fi
  log "$name $stamp: building $pkg (cold builds take minutes; progress below)"
  local logf=$cache/$name.build.log start=$SECONDS
  (
    cd "$root/hack/$dir"
    # -v prints each package as it is compiled: count them for progress.
    CGO_ENABLED=0 go build -v -trimpath -ldflags "$5" -o "$bin.tmp" "$pkg" 2>&1
  ) > >(tee "$logf" | awk -v n="$name" '{c++; if (c%100==0) {printf "[k8s-assets] %s: %d packages compiled\n", n, c; fflush()}}' >&2) || {
    sleep 1
    log "$name: build failed; last lines of $logf:"
    tail -n 30 "$logf" >&2
    exit 1
  }
  mv "$bin.tmp" "$bin"
  echo "$stamp" > "$bin.version"
  log "$name $stamp: built in $((SECONDS - start))s"
}

k8s_ldflags() {
  local pkg=k8s.io/component-base/version
  echo "-s -w -X $pkg.gitVersion=v$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=${K8S_VERSION#1.} -X $pkg.gitTreeState=clean"
}

# link NAME links the cached binary into bin/k8s/<version>/.
link() { ln -sfn "$cache/$1" "$out/$1"; }

mkdir -p "$cache" "$out"

build etcd etcd go.etcd.io/etcd/server/v3 "v$ETCD_VERSION" "-s -w"
build kube-apiserver k8s k8s.io/kubernetes/cmd/kube-apiserver "v$K8S_VERSION" "$(k8s_ldflags)"
link etcd
link kube-apiserver
# envtest looks for kubectl beside the other assets; use the installed one.
if command -v kubectl >/dev/null; then ln -sfn "$(command -v kubectl)" "$out/kubectl"; fi

case $mode in
test) ;;
all | node)
  build kube-controller-manager k8s k8s.io/kubernetes/cmd/kube-controller-manager "v$K8S_VERSION" "$(k8s_ldflags)"
  build kube-scheduler k8s k8s.io/kubernetes/cmd/kube-scheduler "v$K8S_VERSION" "$(k8s_ldflags)"
  build kwok kwok sigs.k8s.io/kwok/cmd/kwok "v$KWOK_VERSION" "-s -w"
  link kube-controller-manager
  link kube-scheduler
  link kwok
  if [[ $mode == node ]]; then
    build kubelet k8s k8s.io/kubernetes/cmd/kubelet "v$K8S_VERSION" "$(k8s_ldflags)"
    link kubelet
  fi
  ;;
*)
  log "unknown mode $mode (want test, all or node)"
  exit 2
  ;;
esac

echo "$out"
