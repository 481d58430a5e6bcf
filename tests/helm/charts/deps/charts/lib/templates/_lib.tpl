{{- define "lib.name" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}
{{- define "lib.labels" -}}
chart: {{ .Chart.Name }}-{{ .Chart.Version }}
env: {{ .Values.global.env }}
{{- end -}}
