{{/*
Labels every object carries: k8s/kustomization.yaml's part-of, plus Helm's own (which
test/helm.test.ts ignores when it compares with `kubectl kustomize k8s`). Pod templates and
selectors get none of Helm's: a selector cannot change after install.
*/}}
{{- define "npu-fault.labels" -}}
app.kubernetes.io/part-of: npu-fault
{{ include "npu-fault.helmLabels" . }}
{{- end }}

{{- define "npu-fault.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The component's name and component labels: (list "controller" .) */}}
{{- define "npu-fault.selector" -}}
app.kubernetes.io/name: npu-fault-{{ . }}
app.kubernetes.io/component: {{ . }}
{{- end }}

{{- define "npu-fault.image" -}}
{{- $image := .Values.image -}}
{{- $ref := printf "%s/%s" $image.registry $image.repository -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $ref $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $ref (default .Chart.AppVersion $image.tag | toString) -}}
{{- end -}}
{{- end }}

{{/* A cluster-scoped object's name: (include "npu-fault.clusterName" (list . "npu-fault-controller")) */}}
{{- define "npu-fault.clusterName" -}}
{{- printf "%s%s" (index . 1) (index . 0).Values.clusterScopedNameSuffix -}}
{{- end }}

{{- define "npu-fault.pullSecrets" -}}
{{- with .Values.image.pullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end }}

{{/* The agent's identity as the function's TokenReview sees it. */}}
{{- define "npu-fault.agentUser" -}}
system:serviceaccount:{{ .Values.namespaces.agent }}:npu-fault-agent
{{- end }}

{{/*
Off accelerator nodes (the agent's terms negated, ANDed in one term): the controller and the
function must not share a node with tenants who may have root on it.
*/}}
{{- define "npu-fault.offAcceleratorNodes" -}}
nodeAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    nodeSelectorTerms:
      - matchExpressions:
        {{- range .Values.agent.nodeSelectorTerms }}
          - key: {{ .key }}
            operator: NotIn
            values: {{ toJson .values }}
        {{- end }}
{{- end }}

{{- define "npu-fault.validate" -}}
{{- if not (has .Values.function.mode (list "deployment" "knative")) -}}
{{- fail (printf "function.mode must be deployment or knative, not %q" .Values.function.mode) -}}
{{- end -}}
{{- if not (has (toString .Values.remediation.mode) (list "off" "cordon" "drain")) -}}
{{- fail (printf "remediation.mode must be off, cordon or drain, not %q (quote off: a bare off is false in YAML 1.1)" (toString .Values.remediation.mode)) -}}
{{- end -}}
{{- if and .Values.remediation.drain .Values.remediation.drain.forceDeleteAfterSeconds (not .Values.controller.forceDelete.enabled) -}}
{{- fail "remediation.drain.forceDeleteAfterSeconds needs controller.forceDelete.enabled (pod delete is not granted otherwise)" -}}
{{- end -}}
{{- end }}
