{{/*
The workload of one component: Deployment, Service, HorizontalPodAutoscaler,
PodDisruptionBudget. Each is called with a component context (dict "root" $ "key" "<key>").
*/}}

{{/* Probes: native gRPC probes for gRPC services, HTTP for the gateway and the console, TCP for the simulator (it has no health route). */}}
{{- define "gg.probes" -}}
{{- $root := .root -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{- $v := index $root.Values .key -}}
{{- $p := $root.Values.probes -}}
{{- $live := dict -}}
{{- $ready := dict -}}
{{- if eq $c.protocol "grpc" -}}
{{- $live = dict "grpc" (dict "port" (int $c.port)) -}}
{{- $ready = $live -}}
{{- else if eq .key "gateway" -}}
{{- $live = dict "httpGet" (dict "path" "/healthz" "port" "http") -}}
{{- $ready = dict "httpGet" (dict "path" "/readyz" "port" "http") -}}
{{- else if eq .key "console" -}}
{{- $live = dict "httpGet" (dict "path" $v.livenessPath "port" "http") -}}
{{- $ready = dict "httpGet" (dict "path" $v.readinessPath "port" "http") -}}
{{- else -}}
{{- $live = dict "tcpSocket" (dict "port" "http") -}}
{{- $ready = $live -}}
{{- end -}}
startupProbe:
  {{- toYaml $live | nindent 2 }}
  periodSeconds: {{ $p.startup.periodSeconds }}
  timeoutSeconds: {{ $p.startup.timeoutSeconds }}
  failureThreshold: {{ $p.startup.failureThreshold }}
readinessProbe:
  {{- toYaml $ready | nindent 2 }}
  periodSeconds: {{ $p.readiness.periodSeconds }}
  timeoutSeconds: {{ $p.readiness.timeoutSeconds }}
  failureThreshold: {{ $p.readiness.failureThreshold }}
livenessProbe:
  {{- toYaml $live | nindent 2 }}
  periodSeconds: {{ $p.liveness.periodSeconds }}
  timeoutSeconds: {{ $p.liveness.timeoutSeconds }}
  failureThreshold: {{ $p.liveness.failureThreshold }}
{{- end -}}

{{/* preStop: sleep so the pod leaves the endpoints before SIGTERM starts the drain. */}}
{{- define "gg.lifecycle" -}}
{{- $sleep := int .Values.shutdown.preStopSleepSeconds -}}
{{- if gt $sleep 0 -}}
lifecycle:
  preStop:
    {{- if semverCompare ">=1.30-0" .Capabilities.KubeVersion.Version }}
    sleep:
      seconds: {{ $sleep }}
    {{- else }}
    exec:
      command: ["sleep", "{{ $sleep }}"]
    {{- end }}
{{- end -}}
{{- end -}}

{{/* Pod placement and security shared by the Deployments and the migration Jobs. */}}
{{- define "gg.podCommon" -}}
{{- $root := .root -}}
automountServiceAccountToken: false
enableServiceLinks: false
securityContext:
  {{- toYaml $root.Values.podSecurityContext | nindent 2 }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end }}
{{- with $root.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  - name: tmp
    emptyDir:
      sizeLimit: {{ $root.Values.tmpSizeLimit }}
{{- end -}}

{{- define "gg.deployment" -}}
{{- $root := .root -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{- $v := index $root.Values .key -}}
{{- $autoscaled := dig "autoscaling" "enabled" false $v -}}
{{- $shutdownSeconds := int (default 10 $v.shutdownTimeoutSeconds) -}}
{{- $portName := ternary "grpc" "http" (eq $c.protocol "grpc") -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "gg.componentName" . }}
  labels:
    {{- include "gg.labels" . | nindent 4 }}
spec:
  {{- if not $autoscaled }}
  replicas: {{ $v.replicaCount }}
  {{- end }}
  revisionHistoryLimit: 5
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 0
  selector:
    matchLabels:
      {{- include "gg.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "gg.selectorLabels" . | nindent 8 }}
        {{- with $root.Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        checksum/config: {{ include "gg.configmap" . | sha256sum }}
        {{- with $root.Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "gg.serviceAccountName" $root }}
      # Long enough for the preStop sleep plus the service's own drain (SHUTDOWN_TIMEOUT_MS).
      terminationGracePeriodSeconds: {{ add (int $root.Values.shutdown.preStopSleepSeconds) $shutdownSeconds 10 }}
      {{- include "gg.podCommon" . | nindent 6 }}
      {{- if $root.Values.topologySpread.enabled }}
      topologySpreadConstraints:
        {{- range $root.Values.topologySpread.topologyKeys }}
        - topologyKey: {{ . }}
          maxSkew: {{ $root.Values.topologySpread.maxSkew }}
          whenUnsatisfiable: {{ $root.Values.topologySpread.whenUnsatisfiable }}
          labelSelector:
            matchLabels:
              {{- include "gg.selectorLabels" $ | nindent 14 }}
        {{- end }}
      {{- end }}
      containers:
        - name: {{ $c.name }}
          image: {{ include "gg.image" . | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          ports:
            - name: {{ $portName }}
              containerPort: {{ $c.port }}
              protocol: TCP
            {{- if eq .key "console" }}
            # The operator endpoints (/internal/*, CONSOLE_ADMIN_PORT): never routed by the Ingress.
            - name: admin
              containerPort: {{ $v.adminPort }}
              protocol: TCP
            {{- end }}
            {{- if and $c.metrics $root.Values.metrics.enabled }}
            - name: metrics
              containerPort: {{ $root.Values.metrics.port }}
              protocol: TCP
            {{- end }}
          envFrom:
            - configMapRef:
                name: {{ include "gg.componentName" . }}
          {{- with include "gg.secretEnv" . }}
          env:
            {{- . | trim | nindent 12 }}
          {{- end }}
          {{- include "gg.probes" . | nindent 10 }}
          {{- include "gg.lifecycle" $root | nindent 10 }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.containerSecurityContext | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
{{- end -}}

{{- define "gg.service" -}}
{{- $root := .root -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{- $v := index $root.Values .key -}}
{{- $isGateway := eq .key "gateway" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "gg.componentName" . }}
  labels:
    {{- include "gg.labels" . | nindent 4 }}
  {{- if and $isGateway $v.service.annotations }}
  annotations:
    {{- toYaml $v.service.annotations | nindent 4 }}
  {{- end }}
spec:
  type: {{ if $isGateway }}{{ $v.service.type }}{{ else }}ClusterIP{{ end }}
  selector:
    {{- include "gg.selectorLabels" . | nindent 4 }}
  ports:
    {{- if eq $c.protocol "grpc" }}
    - name: grpc
      port: {{ $c.port }}
      targetPort: grpc
      protocol: TCP
      appProtocol: kubernetes.io/h2c
    {{- else }}
    - name: http
      port: {{ if $isGateway }}{{ $v.service.port }}{{ else }}{{ $c.port }}{{ end }}
      targetPort: http
      protocol: TCP
      appProtocol: http
    {{- end }}
    {{- if eq .key "console" }}
    - name: admin
      port: {{ $v.adminPort }}
      targetPort: admin
      protocol: TCP
      appProtocol: http
    {{- end }}
    {{- if and $c.metrics $root.Values.metrics.enabled }}
    - name: metrics
      port: {{ $root.Values.metrics.port }}
      targetPort: metrics
      protocol: TCP
    {{- end }}
{{- end -}}

{{/*
A headless Service beside each gRPC component's Service: its DNS name answers every ready pod's
address, so callers balance over the pods themselves (grpc.clientLoadBalancing) instead of riding
one long-lived connection to one pod through the ClusterIP.
*/}}
{{- define "gg.headlessService" -}}
{{- $root := .root -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{- if eq $c.protocol "grpc" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "gg.componentName" . }}-headless
  labels:
    {{- include "gg.labels" . | nindent 4 }}
spec:
  clusterIP: None
  selector:
    {{- include "gg.selectorLabels" . | nindent 4 }}
  ports:
    - name: grpc
      port: {{ $c.port }}
      targetPort: grpc
      protocol: TCP
      appProtocol: kubernetes.io/h2c
{{- end -}}
{{- end -}}

{{- define "gg.hpa" -}}
{{- $v := index .root.Values .key -}}
{{- if dig "autoscaling" "enabled" false $v -}}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "gg.componentName" . }}
  labels:
    {{- include "gg.labels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "gg.componentName" . }}
  minReplicas: {{ $v.autoscaling.minReplicas }}
  maxReplicas: {{ $v.autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ $v.autoscaling.targetCPUUtilizationPercentage }}
  behavior:
    # Scaling down drains pods that may hold long streams: go slowly.
    scaleDown:
      stabilizationWindowSeconds: 300
      policies:
        - type: Pods
          value: 1
          periodSeconds: 60
{{- end -}}
{{- end -}}

{{- define "gg.pdb" -}}
{{- $v := index .root.Values .key -}}
{{- if dig "pdb" "enabled" false $v -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "gg.componentName" . }}
  labels:
    {{- include "gg.labels" . | nindent 4 }}
spec:
  maxUnavailable: {{ $v.pdb.maxUnavailable }}
  # Evicting a pod that is not ready loses nothing; without this, one crash-looping pod blocks drains.
  unhealthyPodEvictionPolicy: AlwaysAllow
  selector:
    matchLabels:
      {{- include "gg.selectorLabels" . | nindent 6 }}
{{- end -}}
{{- end -}}

{{- define "gg.serviceMonitor" -}}
{{- $root := .root -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{- if and $c.metrics $root.Values.metrics.enabled $root.Values.metrics.serviceMonitor.enabled -}}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ include "gg.componentName" . }}
  labels:
    {{- include "gg.labels" . | nindent 4 }}
    {{- with $root.Values.metrics.serviceMonitor.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels:
      {{- include "gg.selectorLabels" . | nindent 6 }}
  endpoints:
    - port: metrics
      path: /metrics
      interval: {{ $root.Values.metrics.serviceMonitor.interval }}
      scrapeTimeout: {{ $root.Values.metrics.serviceMonitor.scrapeTimeout }}
{{- end -}}
{{- end -}}

{{/*
The migration hook Job of a component with a database: `node dist/migrate.js` from the service's
own image, before install and before every upgrade (so new code never meets an old schema). It
reads only the database Secret: the chart's ConfigMaps do not exist yet when pre-install hooks run.
*/}}
{{- define "gg.migrationJob" -}}
{{- $root := .root -}}
{{- $c := include "gg.component" . | fromYaml -}}
{{- if include "gg.migrationJob.enabled" . -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ printf "%s-migrate" (include "gg.componentName" .) | trunc 63 | trimSuffix "-" }}
  labels:
    {{- include "gg.commonLabels" $root | nindent 4 }}
    app.kubernetes.io/component: migration
    generation-gateway/service: {{ $c.name }}
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: {{ $root.Values.migrations.hookWeight | quote }}
    helm.sh/hook-delete-policy: {{ $root.Values.migrations.hookDeletePolicy }}
spec:
  backoffLimit: {{ $root.Values.migrations.backoffLimit }}
  activeDeadlineSeconds: {{ $root.Values.migrations.activeDeadlineSeconds }}
  template:
    metadata:
      labels:
        {{- include "gg.instanceLabels" $root | nindent 8 }}
        app.kubernetes.io/component: migration
        generation-gateway/service: {{ $c.name }}
    spec:
      restartPolicy: Never
      serviceAccountName: {{ default "default" $root.Values.migrations.serviceAccountName }}
      {{- include "gg.podCommon" . | nindent 6 }}
      containers:
        - name: migrate
          image: {{ include "gg.image" . | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command: ["node", "dist/migrate.js"]
          env:
            - name: LOG_LEVEL
              value: {{ $root.Values.logLevel | quote }}
            - name: DATABASE_URL
              valueFrom:
                secretKeyRef:
                  name: {{ $root.Values.database.existingSecret }}
                  key: {{ index $root.Values.database.keys .key }}
          resources:
            {{- toYaml $root.Values.migrations.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.containerSecurityContext | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
{{- end -}}
{{- end -}}
