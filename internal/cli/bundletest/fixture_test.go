package bundletest_test

import (
	"testing"
)

// fixtures are cases that give the render what a cluster would: each
// asserts what the fixture changes, and a twin without it asserts the
// default, so that neither passes by accident.
const fixtures = `cases:
- name: parent
  parent: {name: web, namespace: team-a, labels: {team: blue}}
  assert:
  - exists: {kind: Deployment, name: web, namespace: team-a}
  - equal: {kind: Deployment, path: metadata.labels.team, value: blue}
  - equal: {kind: ConfigMap, name: web-info, path: data.parent, value: Composition/web}
- name: no parent
  assert:
  - exists: {kind: Deployment, name: release-name, namespace: default}
  - equal: {kind: Deployment, path: metadata.labels.team, value: null}
- name: instance
  parent: {kind: Demo, name: web}
  values: {replicas: 2}
  assert:
  - equal: {kind: ConfigMap, path: data.parent, value: Demo/web}
  - equal: {kind: Deployment, path: spec.replicas, value: 2}
- name: instance refused
  parent: {kind: Demo}
  values: {replicas: -1}
  assert:
  - fails: {message: 'replicas'}
- name: upgrade
  parent: {upgrade: true}
  assert:
  - equal: {kind: ConfigMap, path: data.upgrade, value: "true"}
- name: values files
  valuesFiles: [values/three.yaml, values/image.yaml]
  values: {image: "nginx:1.28"}
  assert:
  - equal: {kind: Deployment, path: spec.replicas, value: 3}
  - equal: {kind: Deployment, path: "spec.template.spec.containers[name=app].image", value: "nginx:1.28"}
- name: lookups
  parent: {namespace: team-a}
  lookups:
  - {apiVersion: v1, kind: Secret, metadata: {name: demo-password, namespace: team-a}, data: {password: c2VjcmV0}}
  assert:
  - equal: {kind: Deployment, path: "spec.template.spec.containers[name=app].env[0].name", value: PASSWORD}
- name: lookups elsewhere
  lookups:
  - {apiVersion: v1, kind: Secret, metadata: {name: demo-password, namespace: team-a}}
  assert:
  - equal: {kind: Deployment, path: "spec.template.spec.containers[name=app].env", value: null}
- name: observed
  observed:
    web: {spec: {clusterIP: 10.0.0.10}}
  assert:
  - equal: {kind: ConfigMap, name: release-name-endpoint, path: data.url, value: "http://10.0.0.10"}
- name: observed unknown id
  observed:
    db: {spec: {clusterIP: 10.0.0.10}}
  assert:
  - absent: {kind: ConfigMap, name: release-name-endpoint}
- name: kube version
  capabilities: {kubeVersion: v1.30.2}
  assert:
  - equal: {kind: ConfigMap, name: release-name-info, path: data.kubeVersion, value: v1.30.2}
- name: default kube version
  assert:
  - equal: {kind: ConfigMap, name: release-name-info, path: data.kubeVersion, value: v1.36.3}
- name: kube version refused
  capabilities: {kubeVersion: v1.24.0}
  assert:
  - fails: {message: 'requires kubeVersion: >=1\.25\.0-0 which is incompatible with Kubernetes v1\.24\.0'}
- name: api versions
  capabilities: {apiVersions: [monitoring.coreos.com/v1/ServiceMonitor]}
  assert:
  - exists: {apiVersion: monitoring.coreos.com/v1, kind: ServiceMonitor, name: release-name, namespace: default}
- name: cluster-scoped api versions
  capabilities: {apiVersions: [monitoring.coreos.com/v1/ServiceMonitor], clusterScoped: [monitoring.coreos.com/ServiceMonitor]}
  assert:
  - fails: {message: 'ServiceMonitor.monitoring.coreos.com is cluster-scoped and the bundle.s spec.permissions.clusterScoped does not allow it'}
- name: without api versions
  capabilities: {apiVersions: [monitoring.coreos.com/v1/ServiceMonitor], withoutAPIVersions: [monitoring.coreos.com/v1]}
  assert:
  - absent: {kind: ServiceMonitor}
`

func TestFixtures(t *testing.T) {
	dir := demo(t, map[string]string{
		"fixtures.yaml":      fixtures,
		"values/three.yaml":  "replicas: 3\nimage: nginx:1.26\n",
		"values/image.yaml":  "image: nginx:1.27\n",
		"values/ignored.yml": "cases: not a case file: a subfolder's\n",
	})
	out, errOut, code := stencilTest(t, dir)
	if code != 0 {
		t.Fatalf("exit status %d, want 0\n%s%s", code, out, errOut)
	}
	cases := parseOutput(t, out)
	if len(cases) != 16 {
		t.Errorf("%d cases ran, want 16:\n%s", len(cases), out)
	}
	for name, c := range cases {
		if c.status != "PASS" {
			t.Errorf("case %s: %s %q", name, c.status, c.lines)
		}
	}
}
