{{/*
Environment of a component: non-secret variables go to its ConfigMap ("gg.configEnv", a YAML map),
secret ones are read from the existing Secrets ("gg.secretEnv", a list of env entries).
*/}}

{{- define "gg.configEnv" -}}
{{- $root := .root -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{- $v := index $root.Values .key -}}
{{- $env := dict "LOG_LEVEL" $root.Values.logLevel -}}
{{- if eq $c.name "provider-simulator" -}}
{{- $_ := set $env "SIM_HOST" "0.0.0.0" -}}
{{- $_ := set $env "SIM_PORT" (toString $c.port) -}}
{{- else -}}
{{- $_ := set $env "SHUTDOWN_TIMEOUT_MS" (toString (mul (int $v.shutdownTimeoutSeconds) 1000)) -}}
{{- if $root.Values.observability.otlpEndpoint -}}
{{- $_ := set $env "OTEL_EXPORTER_OTLP_ENDPOINT" $root.Values.observability.otlpEndpoint -}}
{{- end -}}
{{- if and $c.metrics $root.Values.metrics.enabled -}}
{{- $_ := set $env "METRICS_PORT" (toString $root.Values.metrics.port) -}}
{{- end -}}
{{- end -}}
{{- if and $c.nats (not $root.Values.events.existingSecret) -}}
{{- $_ := set $env "NATS_URL" $root.Values.events.natsUrl -}}
{{- end -}}
{{- if $c.nats -}}
{{- $_ := set $env "EVENTS_NAMESPACE" $root.Values.events.namespace -}}
{{- $_ := set $env "DEPLOYMENT_ID" (default (printf "%s/%s" $root.Release.Namespace $root.Release.Name) $root.Values.events.deploymentId) -}}
{{- end -}}
{{- if eq $c.protocol "grpc" -}}
{{- $_ := set $env "GRPC_HOST" "0.0.0.0" -}}
{{- $_ := set $env "GRPC_PORT" (toString $c.port) -}}
{{- $_ := set $env "GRPC_MAX_CONNECTION_AGE_MS" (toString $root.Values.grpc.maxConnectionAgeMs) -}}
{{- end -}}
{{- if $c.database -}}
{{- $_ := set $env "DB_POOL_MAX" (toString $root.Values.database.poolMax) -}}
{{- $_ := set $env "MIGRATE_ON_START" (ternary "false" "true" (include "gg.migrationJob.enabled" . | eq "true")) -}}
{{- end -}}
{{- if and $c.providers (not $root.Values.providers.existingSecret) -}}
{{- $_ := set $env "PROVIDERS" (include "gg.simulatorProviders" $root) -}}
{{- end -}}
{{- range $callee := $c.calls -}}
{{- $calleeFacts := include "gg.component" (dict "root" $root "key" $callee) | fromYaml -}}
{{- $_ := set $env (printf "%s_ADDR" ($calleeFacts.name | upper | replace "-" "_")) (include "gg.address" (dict "root" $root "key" $callee)) -}}
{{- end -}}
{{- if eq .key "gateway" -}}
{{- $_ := set $env "GATEWAY_HOST" "0.0.0.0" -}}
{{- $_ := set $env "GATEWAY_PORT" (toString $c.port) -}}
{{- $_ := set $env "PUBLIC_BASE_PATH" $v.publicBasePath -}}
{{- $_ := set $env "KEY_CACHE_TTL_MS" (toString $v.keyCacheTtlMs) -}}
{{- $_ := set $env "STATE_REFRESH_MS" (toString $v.stateRefreshMs) -}}
{{- $_ := set $env "BODY_BUDGET_BYTES" (toString $v.bodyBudgetBytes) -}}
{{- $_ := set $env "BODY_BUDGET_PER_ACCOUNT_BYTES" (toString $v.bodyBudgetPerAccountBytes) -}}
{{- $_ := set $env "HTTP_BODY_IDLE_TIMEOUT_MS" (toString $v.bodyIdleTimeoutMs) -}}
{{- $_ := set $env "GATEWAY_TRUST_PROXY" (toString $v.trustProxy) -}}
{{- else if eq .key "text" -}}
{{- $_ := set $env "BODY_BUDGET_BYTES" (toString $v.bodyBudgetBytes) -}}
{{- else if eq .key "billing" -}}
{{- $_ := set $env "RATE_LIMIT_PER_SECOND" (toString $v.rateLimitPerSecond) -}}
{{- $_ := set $env "RATE_LIMIT_PER_MINUTE" (toString $v.rateLimitPerMinute) -}}
{{- else if eq .key "catalog" -}}
{{- $_ := set $env "PROVIDER_SYNC_INTERVAL_MS" (toString $v.providerSyncIntervalMs) -}}
{{- $_ := set $env "PROVIDER_SYNC_MAX_AGE_MS" (toString $v.providerSyncMaxAgeMs) -}}
{{- $_ := set $env "PROVIDER_SYNC_TIMEOUT_MS" (toString $v.providerSyncTimeoutMs) -}}
{{- else if eq .key "console" -}}
{{- $_ := set $env "CONSOLE_HOST" "0.0.0.0" -}}
{{- $_ := set $env "CONSOLE_PORT" (toString $c.port) -}}
{{- $_ := set $env "CONSOLE_ADMIN_PORT" (toString $v.adminPort) -}}
{{- $_ := set $env "CONSOLE_TRUST_PROXY" (toString $v.trustProxy) -}}
{{- $publicUrl := $v.publicUrl -}}
{{- if and (not $publicUrl) $root.Values.ingress.enabled $v.ingress.host -}}
{{- $publicUrl = printf "%s://%s" (ternary "https" "http" (gt (len $root.Values.ingress.tls) 0)) $v.ingress.host -}}
{{- end -}}
{{- if $publicUrl -}}
{{- $_ := set $env "CONSOLE_PUBLIC_URL" $publicUrl -}}
{{- end -}}
{{- end -}}
{{- range $name, $value := $v.env -}}
{{- $_ := set $env $name (toString $value) -}}
{{- end -}}
{{- toYaml $env -}}
{{- end -}}

{{/* Env entries read from the existing Secrets. */}}
{{- define "gg.secretEnv" -}}
{{- $root := .root -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{- if $c.database }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ $root.Values.database.existingSecret }}
      key: {{ index $root.Values.database.keys .key }}
{{- end }}
{{- if and $c.providers $root.Values.providers.existingSecret }}
- name: PROVIDERS
  valueFrom:
    secretKeyRef:
      name: {{ $root.Values.providers.existingSecret }}
      key: {{ $root.Values.providers.key }}
{{- end }}
{{- if and $c.nats $root.Values.events.existingSecret }}
- name: NATS_URL
  valueFrom:
    secretKeyRef:
      name: {{ $root.Values.events.existingSecret }}
      key: {{ $root.Values.events.existingSecretKey }}
{{- end }}
{{- if and $root.Values.serviceToken.enabled (ne $c.name "provider-simulator") }}
- name: SERVICE_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "gg.serviceTokenSecret" $root }}
      key: {{ include "gg.serviceTokenKey" $root }}
{{- end }}
{{- if eq .key "console" }}
- name: SESSION_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ $root.Values.console.sessionSecret.existingSecret }}
      key: {{ $root.Values.console.sessionSecret.key }}
{{- if $root.Values.console.adminToken.existingSecret }}
- name: CONSOLE_ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ $root.Values.console.adminToken.existingSecret }}
      key: {{ $root.Values.console.adminToken.key }}
{{- end }}
{{- end }}
{{- end -}}

{{/* "true" when the component gets a migration hook Job. */}}
{{- define "gg.migrationJob.enabled" -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{- if and $c.database .root.Values.migrations.enabled (or (ne .key "console") .root.Values.console.migration) -}}true{{- end -}}
{{- end -}}

{{- define "gg.configmap" -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "gg.componentName" . }}
  labels:
    {{- include "gg.labels" . | nindent 4 }}
data:
  {{- include "gg.configEnv" . | nindent 2 }}
{{- end -}}
