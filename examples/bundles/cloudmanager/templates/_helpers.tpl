{{- define "cm.labels" -}}
app.kubernetes.io/part-of: cloudmanager
app.kubernetes.io/instance: {{ .Composition.Name }}
{{- end -}}

{{- define "cm.secretName" -}}
{{- .Values.db.existingSecret | default (printf "%s-db" .Composition.Name) -}}
{{- end -}}

{{- /* cm.deployment renders a stateless tier: (list $ "front" .Values.front) */ -}}
{{- define "cm.deployment" -}}
{{- $root := index . 0 -}}{{- $tier := index . 1 -}}{{- $v := index . 2 -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $root.Composition.Name }}-{{ $tier }}
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
        ports:
        - containerPort: {{ $v.port }}
        env:
        - name: DB_HOST
          value: {{ $root.Composition.Name }}-db
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $root.Composition.Name }}-{{ $tier }}
  labels:
    {{- include "cm.labels" $root | nindent 4 }}
spec:
  selector:
    app.kubernetes.io/instance: {{ $root.Composition.Name }}
    app.kubernetes.io/component: {{ $tier }}
  ports:
  - port: {{ $v.port }}
{{- end -}}
