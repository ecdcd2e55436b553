{{/* Expand the name of the chart. */}}
{{- define "kube-state-metrics.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{/*
Create a default fully qualified app name, truncated at 63 characters
(the DNS label limit). A release name that contains the chart name is
used as is.
*/}}
{{- define "kube-state-metrics.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end }}

{{/* The name of the service account to use. */}}
{{- define "kube-state-metrics.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
    {{ default (include "kube-state-metrics.fullname" .) .Values.serviceAccount.name }}
{{- else -}}
    {{ default "default" .Values.serviceAccount.name }}
{{- end -}}
{{- end -}}

{{/* The namespace, overridable for combined charts. */}}
{{- define "kube-state-metrics.namespace" -}}
  {{- if .Values.namespaceOverride -}}
    {{- .Values.namespaceOverride -}}
  {{- else -}}
    {{- .Release.Namespace -}}
  {{- end -}}
{{- end -}}

{{/* Chart name and version, as used by the chart label. */}}
{{- define "kube-state-metrics.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{/* Generate basic labels. */}}
{{- define "kube-state-metrics.labels" }}
helm.sh/chart: {{ template "kube-state-metrics.chart" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: metrics
app.kubernetes.io/part-of: {{ template "kube-state-metrics.name" . }}
{{- include "kube-state-metrics.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
{{- if .Values.customLabels }}
{{ toYaml .Values.customLabels }}
{{- end }}
{{- if .Values.releaseLabel }}
release: {{ .Release.Name }}
{{- end }}
{{- end }}

{{/* Selector labels. */}}
{{- define "kube-state-metrics.selectorLabels" }}
{{- if .Values.selectorOverride }}
{{ toYaml .Values.selectorOverride }}
{{- else }}
app.kubernetes.io/name: {{ include "kube-state-metrics.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
{{- end }}

{{/* Sets default scrape limits for servicemonitor. */}}
{{- define "servicemonitor.scrapeLimits" -}}
{{- with .sampleLimit }}
sampleLimit: {{ . }}
{{- end }}
{{- with .targetLimit }}
targetLimit: {{ . }}
{{- end }}
{{- with .labelLimit }}
labelLimit: {{ . }}
{{- end }}
{{- with .labelNameLengthLimit }}
labelNameLengthLimit: {{ . }}
{{- end }}
{{- with .labelValueLengthLimit }}
labelValueLengthLimit: {{ . }}
{{- end }}
{{- end -}}

{{/* The image to use for kube-state-metrics. */}}
{{- define "kube-state-metrics.image" -}}
{{- if .Values.image.sha -}}
{{- if .Values.global.imageRegistry -}}
{{- printf "%s/%s:%s@%s" .Values.global.imageRegistry .Values.image.repository (default (printf "v%s" .Chart.AppVersion) .Values.image.tag) .Values.image.sha -}}
{{- else -}}
{{- printf "%s/%s:%s@%s" .Values.image.registry .Values.image.repository (default (printf "v%s" .Chart.AppVersion) .Values.image.tag) .Values.image.sha -}}
{{- end -}}
{{- else -}}
{{- if .Values.global.imageRegistry -}}
{{- printf "%s/%s:%s" .Values.global.imageRegistry .Values.image.repository (default (printf "v%s" .Chart.AppVersion) .Values.image.tag) -}}
{{- else -}}
{{- printf "%s/%s:%s" .Values.image.registry .Values.image.repository (default (printf "v%s" .Chart.AppVersion) .Values.image.tag) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The image to use for kube-rbac-proxy. */}}
{{- define "kubeRBACProxy.image" -}}
{{- $registry := .Values.global.imageRegistry | default .Values.kubeRBACProxy.image.registry -}}
{{- printf "%s/%s:%s" $registry .Values.kubeRBACProxy.image.repository .Values.kubeRBACProxy.image.tag -}}
{{- end -}}

{{/* The image pull secrets: global ones, then the chart's. */}}
{{- define "kube-state-metrics.imagePullSecrets" -}}
{{- range (concat .Values.global.imagePullSecrets .Values.imagePullSecrets) }}
{{- if eq (typeOf .) "map[string]interface {}" }}
- {{ toYaml . | trim }}
{{- else }}
- name: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The namespaces to watch, as the --namespaces flag takes them. */}}
{{- define "kube-state-metrics.namespaces" -}}
{{- $namespaces := list }}
{{- if .Values.namespaces }}
{{- range $ns := splitList "," (join "," .Values.namespaces) }}
{{- $namespaces = append $namespaces (tpl $ns $) }}
{{- end }}
{{- end }}
{{- if .Values.releaseNamespace }}
{{- $namespaces = append $namespaces (include "kube-state-metrics.namespace" .) }}
{{- end }}
{{- $namespaces | uniq | join "," }}
{{- end -}}

{{/* A probe of the deployment. Takes (list $ $.Values.xProbe "/livez" "http"). */}}
{{- define "kube-state-metrics.probe" -}}
{{- $p := index . 1 }}
failureThreshold: {{ $p.failureThreshold }}
httpGet:
  {{- if (index . 0).Values.hostNetwork }}
  host: 127.0.0.1
  {{- end }}
  {{- with $p.httpGet.httpHeaders }}
  httpHeaders:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  path: {{ index . 2 }}
  port: {{ index . 3 }}
  scheme: {{ upper $p.httpGet.scheme }}
initialDelaySeconds: {{ $p.initialDelaySeconds }}
periodSeconds: {{ $p.periodSeconds }}
successThreshold: {{ $p.successThreshold }}
timeoutSeconds: {{ $p.timeoutSeconds }}
{{- end -}}

{{/* Common metadata of every object: name, namespace and labels. Takes (list $ "suffix"). */}}
{{- define "kube-state-metrics.metadata" -}}
{{- $root := index . 0 }}
{{- $suffix := index . 1 }}
name: {{ template "kube-state-metrics.fullname" $root }}{{ $suffix }}
namespace: {{ template "kube-state-metrics.namespace" $root }}
labels:
  {{- include "kube-state-metrics.labels" $root | indent 2 }}
{{- end -}}
