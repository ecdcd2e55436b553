#!/usr/bin/env bash
# oci-runtime.sh makes sure what the container test (internal/e2e,
# TestInstalledController) needs to run stencil's image as a node would is
# installed, and prints the path of runc:
#
#   - runc: Debian's package (1.1.5 on bookworm), the OCI runtime
#     containerd runs containers with on a node;
#   - iptables and iproute2: the pods' network (a bridge, a veth pair
#     per pod) and the one rule kube-proxy would make for the pods to
#     reach the API server through the kubernetes Service.
#
# Missing packages are installed with apt-get, which needs root. Exit
# status 3 means they are missing and cannot be installed here (not root,
# no apt-get, no package source reachable): the test then skips, saying
# why; any other failure fails it.
set -euo pipefail

log() { printf '[oci-runtime] %s\n' "$*" >&2; }

missing() {
  local need=()
  command -v runc >/dev/null || need+=(runc)
  command -v iptables >/dev/null || need+=(iptables)
  command -v ip >/dev/null || need+=(iproute2)
  echo "${need[@]}"
}

need=$(missing)
if [[ -n $need ]]; then
  if [[ $(id -u) != 0 ]]; then
    log "missing: $need; installing them needs root"
    exit 3
  fi
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
fi
command -v runc
