{{/*
NetworkPolicies. networkpolicy.yaml denies all traffic of the release's pods by default; the
policy of each component (below) allows exactly what it needs:
  ingress  the gateway and the console from networkPolicy.ingressFrom; each gRPC service from its
           callers only (billing <- gateway, video-jobs, console; catalog <- gateway, console, text;
           text, media, video-jobs <- gateway); the simulator from the provider-calling services;
           metrics ports from networkPolicy.metricsFrom.
  egress   DNS; PostgreSQL, NATS and the providers where the component uses them; the gRPC
           services it calls; the OTLP collector when configured.
*/}}

{{/* An egress rule to `to` peers (any address when empty) on `ports`. */}}
{{- define "gg.egressRule" -}}
- ports:
    {{- range .ports }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
  {{- with .to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* DNS egress (UDP and TCP 53). */}}
{{- define "gg.dnsEgress" -}}
- ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
  {{- with .Values.networkPolicy.dns.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* Egress to PostgreSQL only: what the migration Jobs need. */}}
{{- define "gg.migrationNetworkPolicy" -}}
{{- $root := . -}}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "gg.fullname" $root }}-migrations
  labels:
    {{- include "gg.commonLabels" $root | nindent 4 }}
    app.kubernetes.io/component: migration
spec:
  podSelector:
    matchLabels:
      {{- include "gg.instanceLabels" $root | nindent 6 }}
      app.kubernetes.io/component: migration
  policyTypes: [Ingress, Egress]
  egress:
    {{- include "gg.dnsEgress" $root | nindent 4 }}
    {{- include "gg.egressRule" $root.Values.networkPolicy.postgres | nindent 4 }}
{{- end -}}

{{- define "gg.networkPolicy" -}}
{{- $root := .root -}}
{{- if $root.Values.networkPolicy.enabled -}}
{{- $key := .key -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{- $np := $root.Values.networkPolicy -}}
{{- $portName := ternary "grpc" "http" (eq $c.protocol "grpc") -}}
{{- /* Installed components calling this one. */ -}}
{{- $callers := list -}}
{{- range $other := list "gateway" "billing" "catalog" "text" "media" "videoJobs" "console" -}}
{{- $ctx := dict "root" $root "key" $other -}}
{{- $facts := include "gg.component" $ctx | fromYaml -}}
{{- if and (include "gg.enabled" $ctx) (has $key $facts.calls) -}}
{{- $callers = append $callers $other -}}
{{- end -}}
{{- end -}}
{{- if eq $key "simulator" -}}
{{- range $other := list "catalog" "text" "media" "videoJobs" -}}
{{- $callers = append $callers $other -}}
{{- end -}}
{{- end -}}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "gg.componentName" . }}
  labels:
    {{- include "gg.labels" . | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "gg.selectorLabels" . | nindent 6 }}
  policyTypes: [Ingress, Egress]
  ingress:
    {{- if or (eq $key "gateway") (eq $key "console") }}
    # Public entry: from the ingress controller (networkPolicy.ingressFrom).
    - ports:
        - port: {{ $portName }}
          protocol: TCP
      {{- with $np.ingressFrom }}
      from:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- end }}
    {{- if $callers }}
    # Callers of this service within the release.
    - ports:
        - port: {{ $portName }}
          protocol: TCP
      from:
        {{- range $callers }}
        - podSelector:
            matchLabels:
              {{- include "gg.selectorLabels" (dict "root" $root "key" .) | nindent 14 }}
        {{- end }}
    {{- end }}
    {{- if and $np.allowAdminCli (has $key (list "billing" "catalog" "console")) }}
    # The operator CLI run in the cluster (a Job or pod labelled component admin-cli; see deploy/README.md):
    # on the console, its operator port only (`admin`, /internal/*), which nothing else may reach.
    - ports:
        - port: {{ ternary "admin" $portName (eq $key "console") }}
          protocol: TCP
      from:
        - podSelector:
            matchLabels:
              {{- include "gg.instanceLabels" $root | nindent 14 }}
              app.kubernetes.io/component: admin-cli
    {{- end }}
    {{- if and $c.metrics $root.Values.metrics.enabled }}
    # Prometheus.
    - ports:
        - port: metrics
          protocol: TCP
      {{- with $np.metricsFrom }}
      from:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- end }}
  egress:
    {{- include "gg.dnsEgress" $root | nindent 4 }}
    {{- if $c.database }}
    {{- include "gg.egressRule" $np.postgres | nindent 4 }}
    {{- end }}
    {{- if $c.nats }}
    {{- include "gg.egressRule" $np.nats | nindent 4 }}
    {{- end }}
    {{- if $c.providers }}
    {{- include "gg.egressRule" $np.providers | nindent 4 }}
    {{- if $root.Values.simulator.enabled }}
    # The provider simulator stands in for the providers.
    - to:
        - podSelector:
            matchLabels:
              {{- include "gg.selectorLabels" (dict "root" $root "key" "simulator") | nindent 14 }}
      ports:
        - port: 8090
          protocol: TCP
    {{- end }}
    {{- end }}
    {{- if and $root.Values.observability.otlpEndpoint (ne $key "simulator") }}
    {{- include "gg.egressRule" $np.otlp | nindent 4 }}
    {{- end }}
    {{- range $callee := $c.calls }}
    {{- $facts := include "gg.component" (dict "root" $root "key" $callee) | fromYaml }}
    - to:
        - podSelector:
            matchLabels:
              {{- include "gg.selectorLabels" (dict "root" $root "key" $callee) | nindent 14 }}
      ports:
        - port: {{ $facts.port }}
          protocol: TCP
    {{- end }}
{{- end -}}
{{- end -}}


{{/* The operator CLI's pods (component admin-cli): DNS, and billing, catalog and the console's operator port only. */}}
{{- define "gg.adminCliNetworkPolicy" -}}
{{- $root := . -}}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "gg.fullname" $root }}-admin-cli
  labels:
    {{- include "gg.commonLabels" $root | nindent 4 }}
    app.kubernetes.io/component: admin-cli
spec:
  podSelector:
    matchLabels:
      {{- include "gg.instanceLabels" $root | nindent 6 }}
      app.kubernetes.io/component: admin-cli
  policyTypes: [Ingress, Egress]
  egress:
    {{- include "gg.dnsEgress" $root | nindent 4 }}
    {{- range $key := list "billing" "catalog" "console" }}
    {{- if include "gg.enabled" (dict "root" $root "key" $key) }}
    - to:
        - podSelector:
            matchLabels:
              {{- include "gg.selectorLabels" (dict "root" $root "key" $key) | nindent 14 }}
      ports:
        - port: {{ ternary "admin" "grpc" (eq $key "console") }}
          protocol: TCP
    {{- end }}
    {{- end }}
{{- end -}}
