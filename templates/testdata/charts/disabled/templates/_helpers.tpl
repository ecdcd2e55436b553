{{- /* Empty: a subchart's define of the same name replaces it. */ -}}
{{- define "disabled.note" }}{{- end }}
