{{- define "shared.label" }}from base{{ end }}
