#!/usr/bin/env bash
# fresh-check.sh is `make fresh-check`: it runs the README's test command
# (.ci/run, which runs exactly that command) in a clone of HEAD in a
# temporary folder, with an empty Go module cache and an empty build cache,
# as a new machine would. CI reuses warm caches and cannot see a step that
# only works because an earlier build downloaded something; this can.
# Then it prints the digest of the controller image the clone builds
# (make image), to compare with the one built elsewhere.
#
# Only what is committed is checked. The Kubernetes binaries built by
# hack/k8s-assets.sh are kept in their per-user cache ($STENCIL_CACHE), so
# they are reused; everything else is downloaded and compiled afresh.
# FRESH_KEEP=1 keeps the temporary folder for a look after a failure.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stencil-fresh.XXXXXX")
cleanup() {
  if [[ ${FRESH_KEEP:-} == 1 ]]; then
    echo "[fresh-check] kept $tmp" >&2
  else
    chmod -R u+w "$tmp" 2>/dev/null || true
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT

git clone --quiet --no-local "$root" "$tmp/stencil"
echo "[fresh-check] $(git -C "$tmp/stencil" log -1 --format='%h %s') in $tmp/stencil" >&2
echo "[fresh-check] GOMODCACHE and GOCACHE empty under $tmp" >&2

start=$SECONDS
(
  cd "$tmp/stencil"
  export GOMODCACHE=$tmp/gomodcache GOCACHE=$tmp/gocache GOFLAGS=-modcacherw
  bash .ci/run
)
echo "[fresh-check] the README's test command passed on empty Go caches in $((SECONDS - start))s"
# The controller image as this clone builds it (at another path, with
# other caches): its digest must be the one make image prints in any
# clone of the same commit, on any machine with the same Go toolchain.
(
  cd "$tmp/stencil"
  export GOMODCACHE=$tmp/gomodcache GOCACHE=$tmp/gocache GOFLAGS=-modcacherw
  make --no-print-directory image | tail -n 1 | sed 's/^/[fresh-check] /'
)
