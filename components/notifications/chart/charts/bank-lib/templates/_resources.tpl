{{/* Container resources from a values map; memory limit defaults to the request. */}}
{{- define "bank-lib.resources" -}}
requests:
  cpu: {{ .requests.cpu | default "10m" }}
  memory: {{ .requests.memory | default "32Mi" }}
limits:
  memory: {{ (.limits | default dict).memory | default .requests.memory | default "32Mi" }}
{{- end -}}

{{/* The bank's pod and container security settings (non-root, read-only, no capabilities). */}}
{{- define "bank-lib.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
fsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "bank-lib.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}
