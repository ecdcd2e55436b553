{{- /* [[ .Name ]].selectorLabels select the pods of one parent. */ -}}
{{- define "[[ .Name ]].selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- /* [[ .Name ]].labels are the labels of every object. stencil adds its
ApplySet's part-of label itself: never write it. */ -}}
{{- define "[[ .Name ]].labels" -}}
{{ include "[[ .Name ]].selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- /* [[ .Name ]].image is the container's image: the tag, or the Chart's appVersion. */ -}}
{{- define "[[ .Name ]].image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
