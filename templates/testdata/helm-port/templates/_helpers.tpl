{{- define "port.fullname" -}}
{{ .Release.Name }}-{{ .Chart.Name }}
{{- end -}}
{{- define "port.nameOverride" -}}
{{ .Values.nameOverride }}
{{- end -}}
