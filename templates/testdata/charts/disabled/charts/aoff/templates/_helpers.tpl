{{- define "shared.label" }}from aoff{{ end }}
{{- define "disabled.note" }}from aoff{{ end }}
