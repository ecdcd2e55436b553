{{- define "broken.name" }}{{ if }}{{ end }}
