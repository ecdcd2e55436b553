#!/usr/bin/env bash
# webhook-loopback.sh installs stencil's admission webhook configuration
# (config/webhook: the ValidatingWebhookConfiguration stencil-validating and
# the MutatingWebhookConfiguration stencil-mutating)
# into the cluster of $KUBECONFIG for a controller that runs on this
# machine, as `make run` and the e2e test run it:
#
#   stencil controller --webhook-host=localhost --webhook-port=PORT ...
#
# makes a certificate for localhost, keeps it in the Secret
# stencil-system/stencil-webhook-cert (so the namespace must exist), injects
# its CA into every entry and points them at https://localhost:PORT.
# With --webhook-client-ca pki/webhook-client-ca.crt of hack/local-cluster.sh
# (as make run passes it), only that cluster's API server, which presents
# the client certificate the CA signed, gets live values in dry runs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

kubectl get namespace stencil-system >/dev/null 2>&1 || kubectl create namespace stencil-system >/dev/null
# Afresh: the running controller replaced each entry's Service with its
# URL, and applying config/webhook's Service reference over that would
# leave both (refused).
kubectl delete validatingwebhookconfiguration stencil-validating --ignore-not-found >/dev/null
kubectl delete mutatingwebhookconfiguration stencil-mutating --ignore-not-found >/dev/null
kubectl apply --server-side -k "$root/config/webhook" >/dev/null
