{{- define "appservice.hasNodePort" -}}
{{- range .Values.ports }}{{ if .nodePort }}true{{ end }}{{ end -}}
{{- end -}}
