package rollout

import "fmt"

// bundleName is the Bundle of the rollout benchmark.
const bundleName = "bench-rollout"

// namespace is the i-th namespace of the rollout benchmark.
func namespace(i int) string { return fmt.Sprintf("bench-tenant-%02d", i) }

// files are the rollout Bundle's files: its Deployment runs image, on
// nodes labelled nodeLabel (type=kwok for all of them).
func files(image, nodeLabel string) map[string]string {
	return map[string]string{
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Composition.Name }}
spec:
  replicas: 1
  selector:
    matchLabels: {app: {{ .Composition.Name }}}
  # The old pod goes before the new one comes: a pod per parent at most.
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 0, maxUnavailable: 1}
  template:
    metadata:
      labels: {app: {{ .Composition.Name }}}
    spec:
      nodeSelector: {` + nodeLabel + `}
      tolerations:
      - {key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}
      containers:
      - name: app
        image: ` + image + `
`,
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}
data:
  image: ` + image + `
`,
	}
}
