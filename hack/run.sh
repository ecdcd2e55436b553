#!/usr/bin/env bash
# run.sh is `make run`: a local cluster (hack/local-cluster.sh) with stencil's
# CRDs, the example Bundles and Compositions, and the controller in the
# foreground. Ctrl-C stops the controller and every process of the cluster.
#
#   CLUSTER=existing make run   uses the cluster of $KUBECONFIG instead
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
stencil=$root/bin/stencil

log() { printf '[run] %s\n' "$*" >&2; }

if [[ ${CLUSTER:-local} == existing ]]; then
  : "${KUBECONFIG:?CLUSTER=existing needs KUBECONFIG pointing at a reachable cluster}"
  kubectl get --raw /readyz >/dev/null || { log "the cluster of KUBECONFIG=$KUBECONFIG is not reachable"; exit 1; }
  log "using the cluster of KUBECONFIG=$KUBECONFIG"
else
  hack/local-cluster.sh up
  export KUBECONFIG=$root/.local/cluster/kubeconfig
  trap 'hack/local-cluster.sh down' EXIT
fi

log "installing the CRDs"
kubectl apply --server-side -k config/crd >/dev/null
kubectl wait --for=condition=Established crd/bundles.stencil.dev crd/compositions.stencil.dev --timeout=60s >/dev/null
for dir in examples/bundles/*/; do
  "$stencil" bundle pack "$dir" | kubectl apply --server-side -f - >/dev/null
  log "Bundle $(basename "$dir") applied"
done
kubectl apply --server-side -f examples/compositions/ >/dev/null
log "Compositions applied from examples/compositions/"

# Free ports for the controller's metrics and probes.
free_port() {
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}
metrics=$(free_port 18080)
probes=$(free_port $((metrics + 1)))

log "starting the controller; Ctrl-C stops it (and the local cluster). In another shell:"
log "    export KUBECONFIG=$KUBECONFIG"
log "    kubectl get compositions -A        # Bundle, Ready, Status (n/m ready)"
log "    curl -s 127.0.0.1:$metrics/metrics | grep ^stencil_"
"$stencil" controller --kubeconfig "$KUBECONFIG" \
  --metrics-bind-address "127.0.0.1:$metrics" --health-probe-bind-address "127.0.0.1:$probes" \
  --zap-devel=false --zap-encoder=console
