{{/*
Names, labels, images and the facts about each service. A "component context" passed to the
helpers below is (dict "root" $ "key" "<values key>"), e.g. (dict "root" $ "key" "videoJobs").
*/}}

{{- define "gg.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gg.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Facts about every component, by values key: the service's name (directory, image, labels),
its port and protocol, what it needs (database, NATS, providers), whom it calls over gRPC, and
whether it is optional (installed only when `<key>.enabled`).
*/}}
{{- define "gg.components" -}}
gateway:   {name: edge-gateway, port: 8080, protocol: http, database: false, nats: true, providers: false, metrics: true, calls: [billing, catalog, text, media, videoJobs]}
billing:   {name: billing, port: 50051, protocol: grpc, database: true, nats: true, providers: false, metrics: true, calls: []}
catalog:   {name: catalog, port: 50052, protocol: grpc, database: true, nats: true, providers: true, metrics: true, calls: []}
text:      {name: text, port: 50053, protocol: grpc, database: false, nats: true, providers: true, metrics: true, calls: [catalog]}
media:     {name: media, port: 50054, protocol: grpc, database: true, nats: true, providers: true, metrics: true, calls: []}
videoJobs: {name: video-jobs, port: 50055, protocol: grpc, database: true, nats: true, providers: true, metrics: true, calls: [billing]}
console:   {name: console, port: 8081, protocol: http, database: true, nats: false, providers: false, metrics: true, calls: [billing, catalog], optional: true}
simulator: {name: provider-simulator, port: 8090, protocol: http, database: false, nats: false, providers: false, metrics: false, calls: [], optional: true}
{{- end -}}

{{/* The facts of one component (a dict). */}}
{{- define "gg.component" -}}
{{- $all := include "gg.components" .root | fromYaml -}}
{{- $c := get $all .key -}}
{{- if not $c -}}{{- fail (printf "unknown component %s" .key) -}}{{- end -}}
{{- toYaml $c -}}
{{- end -}}

{{/* "true" when the component is installed. */}}
{{- define "gg.enabled" -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{- $v := index .root.Values .key -}}
{{- if or (not $c.optional) $v.enabled -}}true{{- end -}}
{{- end -}}

{{/* Resource name of a component: <fullname>-<service name>. */}}
{{- define "gg.componentName" -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{- printf "%s-%s" (include "gg.fullname" .root) $c.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The address callers are given for a component, fully qualified so it resolves from any namespace:
with grpc.clientLoadBalancing its headless Service through DNS (`dns:///<name>-headless.<ns>.svc:<port>`:
every ready pod's address, balanced round-robin by the caller), else its ClusterIP Service (`host:port`).
*/}}
{{- define "gg.address" -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{- if and .root.Values.grpc.clientLoadBalancing (eq $c.protocol "grpc") -}}
{{- printf "dns:///%s-headless.%s.svc:%v" (include "gg.componentName" .) .root.Release.Namespace $c.port -}}
{{- else -}}
{{- printf "%s.%s.svc:%v" (include "gg.componentName" .) .root.Release.Namespace $c.port -}}
{{- end -}}
{{- end -}}

{{/* The Secret and key SERVICE_TOKEN is read from: the operator's, or the one the chart generates. */}}
{{- define "gg.serviceTokenSecret" -}}
{{- default (printf "%s-service-token" (include "gg.fullname" .)) .Values.serviceToken.existingSecret -}}
{{- end -}}
{{- define "gg.serviceTokenKey" -}}
{{- ternary .Values.serviceToken.key "SERVICE_TOKEN" (ne .Values.serviceToken.existingSecret "") -}}
{{- end -}}

{{- define "gg.chartLabel" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels shared by every resource of the release (selects all of its pods). */}}
{{- define "gg.instanceLabels" -}}
app.kubernetes.io/name: {{ include "gg.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gg.commonLabels" -}}
{{ include "gg.instanceLabels" . }}
app.kubernetes.io/part-of: generation-gateway
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "gg.chartLabel" . }}
{{- end -}}

{{/* Selector labels of a component's pods. */}}
{{- define "gg.selectorLabels" -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{ include "gg.instanceLabels" .root }}
app.kubernetes.io/component: {{ $c.name }}
{{- end -}}

{{- define "gg.labels" -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{ include "gg.commonLabels" .root }}
app.kubernetes.io/component: {{ $c.name }}
{{- end -}}

{{/* Image reference of a component. */}}
{{- define "gg.image" -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{- $v := index .root.Values .key -}}
{{- $repo := $v.image.repository | default (printf "%s/%s" (trimSuffix "/" .root.Values.image.repository) $c.name) -}}
{{- $tag := $v.image.tag | default .root.Values.image.tag | default .root.Chart.AppVersion -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}

{{- define "gg.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gg.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* PROVIDERS pointing at the in-cluster simulator (used when providers.existingSecret is empty). */}}
{{- define "gg.simulatorProviders" -}}
{{- $url := printf "http://%s.%s.svc:8090" (include "gg.componentName" (dict "root" . "key" "simulator")) .Release.Namespace -}}
{{- list
  (dict "name" "openai" "kind" "openai" "baseUrl" (printf "%s/openai/v1" $url) "apiKey" "sim-openai-key")
  (dict "name" "anthropic" "kind" "anthropic" "baseUrl" (printf "%s/anthropic" $url) "apiKey" "sim-anthropic-key")
  (dict "name" "google" "kind" "google" "baseUrl" (printf "%s/google/v1beta" $url) "apiKey" "sim-google-key")
  (dict "name" "compat" "kind" "compat" "baseUrl" (printf "%s/compat/v1" $url) "apiKey" "sim-compat-key")
  | toJson -}}
{{- end -}}

{{/* Checks across values that the schema cannot express. */}}
{{- define "gg.validate" -}}
{{- if and (not .Values.providers.existingSecret) (not .Values.simulator.enabled) -}}
{{- fail "providers.existingSecret is required (a Secret holding PROVIDERS), unless simulator.enabled is true" -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled needs metrics.enabled" -}}
{{- end -}}
{{- if and .Values.ingress.enabled .Values.console.enabled -}}
{{- if not .Values.console.ingress.host -}}
{{- fail "console.ingress.host is required with ingress.enabled and console.enabled: the console is served on a host of its own (e.g. console.example.com), not beside the API on ingress.hosts; point its DNS at the ingress controller" -}}
{{- end -}}
{{- if has .Values.console.ingress.host .Values.ingress.hosts -}}
{{- fail (printf "console.ingress.host (%s) is one of ingress.hosts: give the console a host of its own, apart from the API" .Values.console.ingress.host) -}}
{{- end -}}
{{- end -}}
{{- if has (int .Values.console.adminPort) (list 8081 (int .Values.metrics.port)) -}}
{{- fail (printf "console.adminPort (%v) is taken by the console's pages (8081) or metrics.port: give the operator endpoints a port of their own" .Values.console.adminPort) -}}
{{- end -}}
{{- range $key := list "gateway" "billing" "catalog" "text" "media" "videoJobs" "console" -}}
{{- $a := (index $.Values $key).autoscaling -}}
{{- if and $a.enabled (gt (int $a.minReplicas) (int $a.maxReplicas)) -}}
{{- fail (printf "%s.autoscaling.minReplicas (%v) is above maxReplicas (%v)" $key $a.minReplicas $a.maxReplicas) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Prints each non-empty rendered document of a list, separated by `---`. */}}
{{- define "gg.documents" -}}
{{- range . -}}
{{- if trim . }}
---
{{ trim . }}
{{- end -}}
{{- end -}}
{{- end -}}
