#!/usr/bin/env bash
# node.sh adds a real node to the cluster of $KUBECONFIG (the local
# cluster of hack/local-cluster.sh): a kubelet (Kubernetes' own, built by
# hack/k8s-assets.sh) running its pods with containerd 1.6.20 and runc,
# Debian bookworm's packages, as a node of a real cluster does. The
# install test (internal/e2e, TestInstalledController) runs stencil's
# Deployment on it, from the release manifest, while the example
# workloads stay on kwok's fake nodes.
#
#   hack/node.sh deps    install what a node needs (apt-get, root); exit 3 if it cannot be had
#   hack/node.sh up      start containerd and the kubelet, wait until the node is Ready
#   hack/node.sh down    stop every pod, the kubelet and containerd, remove what up made
#
# The node's state (configs, containerd's root, the kubelet's root, pod
# logs) is in $STENCIL_NODE_DIR (default .local/node). Its name is
# $STENCIL_NODE_NAME (default stencil-node); $STENCIL_NODE_LABELS and
# $STENCIL_NODE_TAINTS (kubelet's --node-labels, --register-with-taints)
# label and taint it. Registries named in $STENCIL_NODE_HTTP_REGISTRIES
# (HOST:PORT, comma-separated) are pulled from over plain HTTP.
#
# What the node is, and why, given these machines:
#
#   - cgroup v1: the kubelet refuses it unless told (failCgroupV1: false).
#   - root here lacks CAP_SYS_RESOURCE: no process may lower its
#     oom_score_adj, which runc does for a pod sandbox (-998) unless
#     containerd restricts the scores to its own (restrict_oom_score_adj).
#   - no registry.k8s.io: the sandbox ("pause") image is hack/pause,
#     built by hack/image.
#   - no kube-proxy: one NAT rule takes the pods' traffic to the
#     kubernetes Service's address to the API server on loopback, as
#     kube-proxy would, and the API server calls Services at their
#     endpoints (hack/local-cluster.sh: --enable-aggregator-routing).
#   - the machine's disk is shared and often full of caches: the kubelet
#     evicts only when it is really out (evictionHard), not at its
#     defaults' 10-15% free.
#   - the kubelet serves on loopback and authenticates nobody: kubectl
#     logs and exec do not reach it; pod logs are in the state folder.
#
# Everything made on the machine (the bridge, the NAT rule, cgroups, the
# CNI network) is named after a random id, so nodes of other clones on
# the same machine never meet.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state=${STENCIL_NODE_DIR:-$root/.local/node}
name=${STENCIL_NODE_NAME:-stencil-node}

log() { printf '[node] %s\n' "$*" >&2; }

# wait_for WHAT SECONDS CMD... retries CMD until it succeeds.
wait_for() {
  local what=$1 secs=$2
  shift 2
  for ((i = 0; i < secs * 2; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  log "timed out waiting for $what; logs are in $state"
  return 1
}

missing() {
  local need=()
  command -v containerd >/dev/null || need+=(containerd)
  command -v runc >/dev/null || need+=(runc)
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] || need+=(containernetworking-plugins)
  command -v iptables >/dev/null || need+=(iptables)
  command -v ip >/dev/null || need+=(iproute2)
  echo "${need[@]}"
}

deps() {
  if [[ $(id -u) != 0 ]]; then
    log "a node needs root (network namespaces, cgroups, mounts)"
    exit 3
  fi
  local need
  need=$(missing)
  [[ -z $need ]] && return
  if ! command -v apt-get >/dev/null; then
    log "missing: $need; no apt-get to install them"
    exit 3
  fi
  log "installing Debian's $need with apt-get"
  # shellcheck disable=SC2086
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null 2>&1; then
    # A new machine has no package lists yet.
    if ! apt-get update -qq >/dev/null 2>&1 ||
      ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null; then
      log "apt-get could not install $need"
      exit 3
    fi
  fi
  need=$(missing)
  if [[ -n $need ]]; then
    log "still missing after apt-get: $need"
    exit 1
  fi
}

# free_port START prints the first free port from START on.
free_port() {
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}

# start NAME CMD... starts a daemon in its own session, logging to NAME.log.
start() {
  local n=$1
  shift
  setsid "$@" >"$state/$n.log" 2>&1 </dev/null &
  echo $! >"$state/$n.pid"
}

up() {
  deps
  : "${KUBECONFIG:?KUBECONFIG must name the cluster the node joins}"
  down >/dev/null 2>&1 || true
  local bin
  bin=$("$root/hack/k8s-assets.sh" node | tail -n 1)
  mkdir -p "$state"
  local id subnet
  id=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
  echo "$id" >"$state/id"
  local routes n
  routes=$(ip -4 route)
  for ((i = 0; i < 254; i++)); do
    n=$(((16#${id:0:2} + i) % 254 + 1))
    [[ $routes == *"10.246.$n."* ]] || break
  done
  subnet=10.246.$n
  local bridge=stn$id sock=$state/containerd/containerd.sock
  log "node $name ($id): containerd and a kubelet, pods on $subnet.0/24 (bridge $bridge)"

  # The sandbox image, and the NAT rule standing in for kube-proxy.
  (cd "$root" && go run ./hack/image pause -out "$state/pause.tar" 2>/dev/null)
  local server api svc
  server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  api=${server#https://}
  svc=$(kubectl get service kubernetes -n default -o jsonpath='{.spec.clusterIP}')
  ip link add "$bridge" type bridge
  ip addr add "$subnet.1/24" dev "$bridge"
  ip link set "$bridge" up
  echo 1 >"/proc/sys/net/ipv4/conf/$bridge/route_localnet"
  iptables -t nat -A PREROUTING -i "$bridge" -d "$svc" -p tcp --dport 443 -j DNAT --to-destination "$api" -m comment --comment "stencil-node-$id"
  printf '%s\n' "-t nat -D PREROUTING -i $bridge -d $svc -p tcp --dport 443 -j DNAT --to-destination $api -m comment --comment stencil-node-$id" >"$state/nat-rule"

  mkdir -p "$state/cni" "$state/certs.d" "$state/kubelet" "$state/pod-logs"
  cat >"$state/cni/10-stencil.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "stencil-node-$id", "plugins": [
  {"type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$subnet.0/24", "gateway": "$subnet.1"}]], "routes": [{"dst": "0.0.0.0/0"}]}}]}
EOF
  local r
  for r in ${STENCIL_NODE_HTTP_REGISTRIES//,/ }; do
    mkdir -p "$state/certs.d/$r"
    printf 'server = "http://%s"\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' "$r" "$r" >"$state/certs.d/$r/hosts.toml"
  done
  cat >"$state/containerd.toml" <<EOF
version = 2
root = "$state/containerd/root"
state = "$state/containerd/state"
[grpc]
  address = "$sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "stencil.local/pause:1"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$state/certs.d"
EOF
  # The kubelet's cgroup root, in every hierarchy (it must exist);
  # cpuset's cpus and mems as its parent's, or no task could join it.
  local h
  for h in /sys/fs/cgroup/*/; do
    mkdir -p "$h/stencil-node-$id"
    if [[ -f $h/cpuset.cpus ]]; then
      cat "$h/cpuset.cpus" >"$h/stencil-node-$id/cpuset.cpus"
      cat "$h/cpuset.mems" >"$h/stencil-node-$id/cpuset.mems"
    fi
  done
  start containerd containerd --config "$state/containerd.toml"
  wait_for containerd 30 ctr -a "$sock" version
  ctr -a "$sock" -n k8s.io images import "$state/pause.tar" >/dev/null

  local port healthz
  port=$(free_port 20250)
  healthz=$(free_port $((port + 1)))
  cat >"$state/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /stencil-node-$id
containerRuntimeEndpoint: unix://$sock
address: 127.0.0.1
port: $port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $healthz
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
failSwapOn: false
podLogsDir: $state/pod-logs
resolvConf: /etc/resolv.conf
registerNode: true
# The node shares the machine's disk and memory with everything else on it
# (builds, caches, tests): the kubelet's default thresholds (15% of the disk
# free for images, 10% for the node) evict the pods under test whenever the
# machine is merely full of caches. Evict only when the machine is really out.
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1Gi
  nodefs.inodesFree: 1%
  imagefs.available: 1Gi
  imagefs.inodesFree: 1%
EOF
  start kubelet "$bin/kubelet" --config "$state/kubelet.yaml" --kubeconfig "$KUBECONFIG" --root-dir "$state/kubelet" \
    --hostname-override "$name" --node-labels "${STENCIL_NODE_LABELS:-}" --register-with-taints "${STENCIL_NODE_TAINTS:-}"
  wait_for "node $name to be Ready" 90 kubectl wait --for=condition=Ready "node/$name" --timeout=1s
  log "node $name is Ready"
}

down() {
  [[ -d $state ]] || return 0
  local id sock=$state/containerd/containerd.sock
  id=$(cat "$state/id" 2>/dev/null || true)
  if [[ -f $state/kubelet.pid ]]; then kill "$(cat "$state/kubelet.pid")" 2>/dev/null || true; fi
  if [[ -S $sock ]]; then
    local c
    for c in $(ctr -a "$sock" -n k8s.io containers ls -q 2>/dev/null); do
      ctr -a "$sock" -n k8s.io tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true
    done
    sleep 1
    for c in $(ctr -a "$sock" -n k8s.io containers ls -q 2>/dev/null); do
      # A sandbox's network namespace, which only the CRI would remove.
      local netns
      netns=$(ctr -a "$sock" -n k8s.io containers info "$c" 2>/dev/null |
        sed -n 's|.*"path": "/var/run/netns/\(cni-[0-9a-f-]*\)".*|\1|p' | head -n 1)
      ctr -a "$sock" -n k8s.io tasks delete "$c" >/dev/null 2>&1 || true
      ctr -a "$sock" -n k8s.io containers delete "$c" >/dev/null 2>&1 || true
      [[ -n $netns ]] && ip netns del "$netns" 2>/dev/null || true
    done
  fi
  if [[ -f $state/containerd.pid ]]; then kill "$(cat "$state/containerd.pid")" 2>/dev/null || true; fi
  # containerd's shims of this node (they outlive it), by its socket.
  pkill -f -- "-address $sock" 2>/dev/null || true
  sleep 1
  grep " $state/" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  # The kubelet's links to its containers' logs, in a folder of the machine.
  find /var/log/containers -maxdepth 1 -lname "$state/*" -delete 2>/dev/null || true
  if [[ -n $id ]]; then
    if [[ -f $state/nat-rule ]]; then
      # shellcheck disable=SC2046
      iptables $(cat "$state/nat-rule") 2>/dev/null || true
    fi
    ip link del "stn$id" 2>/dev/null || true
    rm -rf "/var/lib/cni/networks/stencil-node-$id"
    local cg
    for cg in /sys/fs/cgroup/*/stencil-node-"$id"; do
      [[ -d $cg ]] && find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    done
  fi
  rm -f "$state"/*.pid "$state/id"
  log "node stopped"
}

case ${1:-} in
deps) deps ;;
up) up ;;
down) down ;;
*)
  echo "usage: $0 deps|up|down" >&2
  exit 2
  ;;
esac
