{{- define "exporter.fullname" -}}
{{ .Release.Name }}-{{ default .Chart.Name .Values.nameOverride | trunc 63 }}
{{- end }}
