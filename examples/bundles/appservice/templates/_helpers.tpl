{{- /* appservice.hasNodePort prints "true" when any port has a nodePort. */ -}}
{{- define "appservice.hasNodePort" -}}
{{- range .Values.ports }}{{ if .nodePort }}true{{ end }}{{ end -}}
{{- end -}}
