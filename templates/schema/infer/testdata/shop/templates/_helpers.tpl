{{- define "shop.fullname" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 -}}
{{- end -}}

{{- define "shop.image" -}}
{{- $registry := .global.imageRegistry -}}
{{- printf "%s%s:%s" $registry .image.repository (.image.tag | default "latest") -}}
{{- end -}}
