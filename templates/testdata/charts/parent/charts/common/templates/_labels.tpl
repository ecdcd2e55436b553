{{- define "common.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- range $k, $v := .Values.global.labels }}
{{ $k }}: {{ $v }}
{{- end }}
{{- end -}}
