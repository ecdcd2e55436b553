#!/usr/bin/env bash
# cluster.sh runs a small but real Kubernetes control plane on loopback, for
# `make run` and the e2e test: etcd, kube-apiserver, kube-controller-manager
# (every controller, the node lifecycle one included), kube-scheduler and
# kwok, which plays the kubelet for fake nodes so pods are scheduled, become
# Ready and Deployments roll out. kwok's volume stages provision a PV for
# every PVC of the default StorageClass, so StatefulSets with volume claim
# templates become Ready too.
#
#   hack/local-cluster.sh up      build what is missing, start, wait until a node is Ready
#   hack/local-cluster.sh down    stop every process started by up (safe to repeat)
#   hack/local-cluster.sh env     print the export line for KUBECONFIG
#
# STENCIL_AUDIT=1 turns the API server's audit log on: every request, at
# the Metadata level (user, verb, resource, no bodies), one JSON line per
# stage in .local/cluster/audit.log, so requests can be counted per user
# and verb on the server side (make bench-scale does).
# STENCIL_SERVICE_CIDR widens the Services' cluster IP range (default
# 10.0.0.0/24, 254 addresses; make bench-scale needs thousands).
# STENCIL_KCM_CONTROLLERS is kube-controller-manager's --controllers
# (default '*', every controller on by default). make bench-scale turns
# the endpoints controllers off: they answer every Service the benchmark
# creates with writes of their own, late, so that one phase's would fall
# into the next one's measurement.
#
# The API server presents a client certificate to admission webhooks (its
# --admission-control-config-file names a WebhookAdmissionConfiguration
# whose kubeconfig holds pki/webhook-client.crt for every webhook host),
# signed by pki/webhook-client-ca.crt: the controller that `make run` and
# the e2e test start trusts that CA (--webhook-client-ca), so only the API
# server's dry runs get live values in their warnings.
#
# State (certificates, etcd data, logs, kubeconfig, pid files) lives in
# .local/cluster/ of the clone (ignored by git). A new `up` stops what a
# previous one left running, wipes its etcd data and picks free ports.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state=${STENCIL_CLUSTER_DIR:-$root/.local/cluster}
kubeconfig=$state/kubeconfig
nodes=${STENCIL_NODES:-2}

log() { printf '[cluster] %s\n' "$*" >&2; }

# port_free PORT reports whether nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port START prints the first free port from START on.
free_port() {
  local p=$1
  while ! port_free "$p"; do p=$((p + 1)); done
  echo "$p"
}

down() {
  local stopped=0
  for pidfile in "$state"/pids/*.pid; do
    [[ -f $pidfile ]] || continue
    local pid
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      stopped=$((stopped + 1))
    fi
    rm -f "$pidfile"
  done
  # Give them a moment, then make sure.
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    pgrep -f "$state/" >/dev/null 2>&1 || break
    sleep 0.5
  done
  pkill -9 -f "$state/" 2>/dev/null || true
  log "stopped $stopped process(es)"
}

certs() {
  local pki=$state/pki
  mkdir -p "$pki"
  [[ -f $pki/ca.crt && -f $pki/admin.crt && -f $pki/apiserver.crt && -f $pki/sa.key ]] && return
  log "creating certificates in $pki"
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=stencil-local-ca" 2>/dev/null
    cat > apiserver.ext <<EOF
subjectAltName = IP:127.0.0.1, IP:10.0.0.1, DNS:localhost, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local
extendedKeyUsage = serverAuth
EOF
    openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 3650 -extfile apiserver.ext 2>/dev/null
    printf 'extendedKeyUsage = clientAuth\n' > client.ext
    openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=stencil-admin" 2>/dev/null
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt -days 3650 -extfile client.ext 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
}

# webhook_client writes the CA and client certificate the API server
# presents to admission webhooks, the kubeconfig holding them (for every
# webhook host: the user '*') and the AdmissionConfiguration naming it.
webhook_client() {
  local pki=$state/pki
  if [[ ! -f $pki/webhook-client.crt ]]; then
    log "creating the API server's webhook client certificate in $pki"
    (
      cd "$pki"
      openssl req -x509 -newkey rsa:2048 -nodes -keyout webhook-client-ca.key -out webhook-client-ca.crt -days 3650 \
        -subj "/CN=stencil-local-webhook-client-ca" 2>/dev/null
      openssl req -newkey rsa:2048 -nodes -keyout webhook-client.key -out webhook-client.csr \
        -subj "/CN=kube-apiserver-webhook-client" 2>/dev/null
      printf 'extendedKeyUsage = clientAuth\n' > client.ext
      openssl x509 -req -in webhook-client.csr -CA webhook-client-ca.crt -CAkey webhook-client-ca.key -CAcreateserial \
        -out webhook-client.crt -days 3650 -extfile client.ext 2>/dev/null
    )
  fi
  cat > "$state/webhook-client.kubeconfig" <<EOF
apiVersion: v1
kind: Config
users:
- name: '*'
  user:
    client-certificate: $pki/webhook-client.crt
    client-key: $pki/webhook-client.key
EOF
  cat > "$state/admission.yaml" <<EOF
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $state/webhook-client.kubeconfig
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $state/webhook-client.kubeconfig
EOF
}

# start NAME BINARY ARGS... starts a component in the background, in its
# own session, logging to logs/NAME.log.
start() {
  local name=$1 bin=$2
  shift 2
  setsid "$bin" "$@" >"$state/logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$state/pids/$name.pid"
}

# wait_for WHAT SECONDS CMD... retries CMD until it succeeds.
wait_for() {
  local what=$1 secs=$2
  shift 2
  for ((i = 0; i < secs * 2; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  log "timed out waiting for $what; logs are in $state/logs"
  return 1
}

write_kubeconfig() {
  local pki=$state/pki
  cat > "$kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: stencil-local
  cluster:
    server: https://127.0.0.1:$1
    certificate-authority: $pki/ca.crt
users:
- name: admin
  user:
    client-certificate: $pki/admin.crt
    client-key: $pki/admin.key
contexts:
- name: stencil-local
  context: {cluster: stencil-local, user: admin}
current-context: stencil-local
EOF
}

up() {
  local started=$SECONDS
  local bin
  bin=$("$root/hack/k8s-assets.sh" all | tail -n 1)
  down >/dev/null 2>&1 || true
  rm -rf "$state/etcd" "$state/logs" "$state/pids"
  mkdir -p "$state/logs" "$state/pids"
  certs
  webhook_client
  local pki=$state/pki
  local etcd_port peer_port api_port kcm_port sched_port kwok_port
  etcd_port=$(free_port 23790)
  peer_port=$(free_port $((etcd_port + 1)))
  api_port=$(free_port 26443)
  kcm_port=$(free_port 20257)
  sched_port=$(free_port $((kcm_port + 1)))
  kwok_port=$(free_port $((sched_port + 1)))
  write_kubeconfig "$api_port"

  log "starting etcd on 127.0.0.1:$etcd_port"
  start etcd "$bin/etcd" --name local --data-dir "$state/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "local=http://127.0.0.1:$peer_port" --unsafe-no-fsync
  wait_for etcd 30 curl -sf "http://127.0.0.1:$etcd_port/health"

  local audit=()
  if [[ ${STENCIL_AUDIT:-0} == 1 ]]; then
    # RequestReceived is left out: every request is logged once when it
    # completes, a watch also when its response starts. The log backend
    # blocks: the request's handler writes the event itself.
    cat > "$state/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
EOF
    rm -f "$state/audit.log"
    audit=(--audit-policy-file "$state/audit-policy.yaml" --audit-log-path "$state/audit.log"
      --audit-log-format json --audit-log-mode blocking)
    log "audit log: $state/audit.log"
  fi

  log "starting kube-apiserver on https://127.0.0.1:$api_port"
  start kube-apiserver "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" --client-ca-file "$pki/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range "${STENCIL_SERVICE_CIDR:-10.0.0.0/24}" --authorization-mode Node,RBAC --allow-privileged \
    --admission-control-config-file "$state/admission.yaml" "${audit[@]}"
  wait_for kube-apiserver 90 kubectl --kubeconfig "$kubeconfig" get --raw /readyz

  log "starting kube-controller-manager, kube-scheduler and kwok"
  start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$kubeconfig" \
    --authentication-kubeconfig "$kubeconfig" --authorization-kubeconfig "$kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$kcm_port" --leader-elect=false --controllers "${STENCIL_KCM_CONTROLLERS:-*}" \
    --root-ca-file "$pki/ca.crt" --service-account-private-key-file "$pki/sa.key" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --use-service-account-credentials=false --node-monitor-grace-period 40s
  start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$kubeconfig" \
    --authentication-kubeconfig "$kubeconfig" --authorization-kubeconfig "$kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$sched_port" --leader-elect=false
  local stages
  # `go mod download` fetches the module when the cache lacks it (a cached
  # kwok binary does not mean its source is in this machine's module cache).
  stages=$(cd "$root/hack/kwok" && go mod download sigs.k8s.io/kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
  local configs=()
  for f in "$stages"/node/fast/*.yaml "$stages"/node/heartbeat-with-lease/*.yaml "$stages"/pod/fast/*.yaml \
    "$stages"/volume/fast/pv-*.yaml "$stages"/volume/fast/pvc-*.yaml; do
    [[ $(basename "$f") == kustomization.yaml ]] || configs+=(--config "$f")
  done
  # kwok renews a Lease per node, as a kubelet does: without one, the
  # node controller finds no heartbeat (the heartbeat stage waits minutes),
  # marks the nodes NotReady 40s after they start and their pods not ready.
  start kwok "$bin/kwok" --kubeconfig "$kubeconfig" --server-address "127.0.0.1:$kwok_port" \
    --node-lease-duration-seconds 40 \
    --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake "${configs[@]}"

  # The default StorageClass whose claims kwok provisions.
  kubectl --kubeconfig "$kubeconfig" apply -f "$stages/volume/fast/storage-class.yaml" >/dev/null
  for ((n = 0; n < nodes; n++)); do
    kubectl --kubeconfig "$kubeconfig" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$n
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-node-$n
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110", ephemeral-storage: 1Ti}
  capacity: {cpu: "32", memory: 256Gi, pods: "110", ephemeral-storage: 1Ti}
EOF
  done
  wait_for "a Ready node" 60 kubectl --kubeconfig "$kubeconfig" wait --for=condition=Ready node --all --timeout=1s
  wait_for "the default ServiceAccount" 60 kubectl --kubeconfig "$kubeconfig" get serviceaccount default -n default
  log "ready in $((SECONDS - started))s: $nodes kwok node(s); logs in $state/logs"
  log "point kubectl at it with:  export KUBECONFIG=$kubeconfig"
}

case ${1:-} in
up) up ;;
down) down ;;
env) echo "export KUBECONFIG=$kubeconfig" ;;
*)
  echo "usage: $0 up|down|env" >&2
  exit 2
  ;;
esac
