{{- define "cm.labels" -}}
app.kubernetes.io/part-of: cloudmanager
app.kubernetes.io/instance: {{ .Composition.Name }}
{{- end -}}

{{- /* cm.name names a tier's objects: (list $ "front" .Values.front.deployment) */ -}}
{{- define "cm.name" -}}
{{- $root := index . 0 -}}{{- $tier := index . 1 -}}{{- $v := index . 2 -}}
{{- $v.name | default (printf "%s-%s" $root.Composition.Name $tier) -}}
{{- end -}}

{{- define "cm.dbName" -}}
{{- include "cm.name" (list . "db" .Values.db.statefulSet) -}}
{{- end -}}

{{- /* cm.secretName is the Secret holding the database's root password. */ -}}
{{- define "cm.secretName" -}}
{{- .Values.db.existingSecret | default (printf "%s-auth" (include "cm.dbName" .)) -}}
{{- end -}}

{{- /* cm.deployment renders a stateless tier and its Service: (list $ "front" .Values.front.deployment) */ -}}
{{- define "cm.deployment" -}}
{{- $root := index . 0 -}}{{- $tier := index . 1 -}}{{- $v := index . 2 -}}
{{- $name := include "cm.name" . -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
  labels:
    {{- include "cm.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $tier }}
spec:
  replicas: {{ $v.replicas }}
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ $root.Composition.Name }}
      app.kubernetes.io/component: {{ $tier }}
  template:
    metadata:
      labels:
        {{- include "cm.labels" $root | nindent 8 }}
        app.kubernetes.io/component: {{ $tier }}
    spec:
      containers:
      - name: {{ $tier }}
        image: {{ $v.image }}
        {{- with $v.command }}
        command:
        {{- toYaml . | nindent 8 }}
        {{- end }}
        ports:
        - containerPort: {{ $v.port }}
        env:
        - name: DB_HOST
          value: {{ include "cm.dbName" $root }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $name }}
  labels:
    {{- include "cm.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $tier }}
spec:
  selector:
    app.kubernetes.io/instance: {{ $root.Composition.Name }}
    app.kubernetes.io/component: {{ $tier }}
  ports:
  - port: {{ $v.port }}
{{- end -}}
