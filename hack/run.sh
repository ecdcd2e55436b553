#!/usr/bin/env bash
# run.sh is `make run`: a local cluster (hack/local-cluster.sh) with stencil's
# CRDs, the example Bundles, the controller, the CRDs of the kinds the
# Bundles publish (made by the controller), then the example Compositions
# and the articles' instances of those kinds (examples/instances/). The
# controller runs until Ctrl-C, which stops it and every process of the
# cluster.
#
# The controller writes each parent's members as a ServiceAccount of the
# parent's namespace (--default-service-account, "stencil", unless the
# parent names one), as installed: examples/tenancy/ gives the examples'
# namespace that ServiceAccount and the RBAC of what its Bundles render, as
# a platform team would.
#
# The controller serves its admission webhook on loopback: config/webhook's
# ValidatingWebhookConfiguration is installed, and the controller
# (--webhook-host=localhost) makes a certificate for localhost, keeps it in
# the Secret stencil-system/stencil-webhook-cert, injects its CA and points
# the configuration at https://localhost:PORT, so
# `kubectl apply --server-side --dry-run=server` shows a Composition's child
# changes and kubectl refuses invalid values.
#
#   CLUSTER=existing make run   uses the cluster of $KUBECONFIG instead
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
stencil=$root/bin/stencil

log() { printf '[run] %s\n' "$*" >&2; }

controller_pid=
cleanup() {
  if [[ -n $controller_pid ]] && kill -0 "$controller_pid" 2>/dev/null; then
    kill "$controller_pid" 2>/dev/null || true
    wait "$controller_pid" 2>/dev/null || true
  fi
  if [[ ${CLUSTER:-local} != existing ]]; then
    hack/local-cluster.sh down
  fi
}
trap cleanup EXIT
# Ctrl-C and kill end the script through its EXIT trap.
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ ${CLUSTER:-local} == existing ]]; then
  : "${KUBECONFIG:?CLUSTER=existing needs KUBECONFIG pointing at a reachable cluster}"
  kubectl get --raw /readyz >/dev/null || { log "the cluster of KUBECONFIG=$KUBECONFIG is not reachable"; exit 1; }
  log "using the cluster of KUBECONFIG=$KUBECONFIG"
else
  hack/local-cluster.sh up
  export KUBECONFIG=$root/.local/cluster/kubeconfig
fi

log "installing the CRDs and stencil's admission policy"
kubectl apply --server-side -k config/crd >/dev/null
kubectl wait --for=condition=Established crd/bundles.stencil.dev crd/compositions.stencil.dev --timeout=60s >/dev/null
# The API server's own check of who may use a parent's ServiceAccount
# (config/admission): until the controller publishes its default account
# to it, it refuses the Compositions that name none.
kubectl apply --server-side -k config/admission >/dev/null
kubectl apply --server-side -f examples/tenancy/ >/dev/null
log "ServiceAccount stencil and its RBAC applied to namespace default (examples/tenancy/)"
publishing=()
for dir in examples/bundles/*/; do
  name=$(basename "$dir")
  "$stencil" bundle pack "$dir" | kubectl apply --server-side -f - >/dev/null
  if [[ -f $dir/stencil.yaml ]] && grep -q '^api:' "$dir/stencil.yaml"; then
    publishing+=("$name")
    log "Bundle $name applied; it publishes a kind"
  else
    log "Bundle $name applied"
  fi
done

# Free ports for the controller's metrics, probes and webhook.
free_port() {
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}
metrics=$(free_port 18080)
probes=$(free_port $((metrics + 1)))
webhook=$(free_port 19443)

hack/webhook-loopback.sh
log "webhook configuration stencil-validating installed; the controller serves it on https://localhost:$webhook"
if [[ ${CLUSTER:-local} == existing ]]; then
  log "(only an API server running on this machine reaches it there; elsewhere, dry runs are not reviewed)"
fi
certs=$root/.local/run/webhook-certs
mkdir -p "$certs"
# The local cluster's API server presents a client certificate signed by
# this CA to the webhook (hack/local-cluster.sh): only its dry runs get
# live values. Another cluster's API server presents none.
client_ca=()
if [[ ${CLUSTER:-local} != existing ]]; then
  client_ca=(--webhook-client-ca "$root/.local/cluster/pki/webhook-client-ca.crt" --webhook-client-name kube-apiserver-webhook-client)
fi

log "starting the controller; Ctrl-C stops it (and the local cluster)"
"$stencil" controller --kubeconfig "$KUBECONFIG" \
  --metrics-bind-address "127.0.0.1:$metrics" --metrics-secure=false --health-probe-bind-address "127.0.0.1:$probes" \
  --webhook-host localhost --webhook-port "$webhook" --webhook-cert-dir "$certs" --webhook-namespace stencil-system ${client_ca[@]+"${client_ca[@]}"} \
  --default-service-account stencil \
  --zap-devel=false --zap-encoder=console &
controller_pid=$!

# published_crd_established NAME: the CRD the controller keeps for Bundle
# NAME's kind exists and is Established.
published_crd_established() {
  kubectl wait --for=condition=Established crd -l "stencil.dev/bundle=$1" --timeout=5s >/dev/null 2>&1
}

# The controller makes the published kinds' CRDs: wait for each before
# applying its instances.
for name in ${publishing[@]+"${publishing[@]}"}; do
  deadline=$((SECONDS + 120))
  until published_crd_established "$name"; do
    if ! kill -0 "$controller_pid" 2>/dev/null; then
      wait "$controller_pid" || true
      controller_pid=
      log "the controller exited before Bundle $name's kind was published"
      exit 1
    fi
    if ((SECONDS > deadline)); then
      why=$(kubectl get bundle "$name" -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}' 2>/dev/null || true)
      log "the CRD of Bundle $name's kind is not Established after 120s${why:+: $why}"
      exit 1
    fi
    sleep 1
  done
  log "the kind of Bundle $name is published: $(kubectl get crd -l "stencil.dev/bundle=$name" -o name)"
done

# stencil's admission policy refuses the Compositions that name no
# ServiceAccount until the controller has published its default one.
deadline=$((SECONDS + 120))
until kubectl apply --server-side --dry-run=server -f examples/compositions/ >/dev/null 2>&1; do
  if ! kill -0 "$controller_pid" 2>/dev/null || ((SECONDS > deadline)); then
    kubectl apply --server-side --dry-run=server -f examples/compositions/ >/dev/null || true
    log "the API server does not admit the example Compositions: has the controller published its default ServiceAccount to stencil's admission policy?"
    exit 1
  fi
  sleep 1
done
kubectl apply --server-side -f examples/compositions/ >/dev/null
log "Compositions applied from examples/compositions/"
# As the articles do: a plain kubectl apply of their YAML, once the
# controller has bound stencil's admission policy to the published kinds.
deadline=$((SECONDS + 60))
until kubectl apply --dry-run=server -f examples/instances/ >/dev/null 2>&1; do
  if ((SECONDS > deadline)); then
    kubectl apply --dry-run=server -f examples/instances/ >/dev/null || true
    log "the API server does not admit the articles' instances"
    exit 1
  fi
  sleep 1
done
kubectl apply -f examples/instances/ >/dev/null
log "the articles' instances applied from examples/instances/"

log "In another shell:"
log "    export KUBECONFIG=$KUBECONFIG"
log "    kubectl get compositions,foos,appservices,cloudmanagers,crontabs -A   # Ready, Status (n/m ready)"
log "    kubectl explain appservice.spec"
log "    sed 's/LOG_LEVEL: debug/LOG_LEVEL: info/' examples/compositions/webapp.yaml | kubectl apply --server-side --dry-run=server -f -   # the children that would change"
log "    curl -s 127.0.0.1:$metrics/metrics | grep ^stencil_"
status=0
wait "$controller_pid" || status=$?
controller_pid=
exit "$status"
