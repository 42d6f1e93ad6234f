{{/* Chart name, a DNS-1123 label. */}}
{{- define "ingressctl.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: the prefix of every resource name, at most 63 characters. */}}
{{- define "ingressctl.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Name of the controller workload, its Service and its PodDisruptionBudget. */}}
{{- define "ingressctl.controller.fullname" -}}
{{- printf "%s-controller" (include "ingressctl.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ingressctl.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels: stable for the life of a release (selectors are immutable). */}}
{{- define "ingressctl.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ingressctl.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "ingressctl.labels" -}}
helm.sh/chart: {{ include "ingressctl.chart" . }}
{{ include "ingressctl.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.controller.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "ingressctl.configName" -}}
{{- default (include "ingressctl.fullname" .) .Values.controller.config.name }}
{{- end }}

{{- define "ingressctl.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "ingressctl.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "ingressctl.leaderElectionName" -}}
{{- if .Values.controller.reportIngressStatus.leaderElectionLockName }}
{{- .Values.controller.reportIngressStatus.leaderElectionLockName }}
{{- else }}
{{- printf "%s-leader-election" (include "ingressctl.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* The Service whose address goes into Ingress status; empty when there is none. */}}
{{- define "ingressctl.externalServiceName" -}}
{{- if .Values.controller.reportIngressStatus.externalService }}
{{- .Values.controller.reportIngressStatus.externalService }}
{{- else if .Values.controller.service.create }}
{{- include "ingressctl.controller.fullname" . }}
{{- end }}
{{- end }}

{{- define "ingressctl.image" -}}
{{- $repo := required "controller.image.repository is required" .Values.controller.image.repository }}
{{- if .Values.controller.image.digest }}
{{- printf "%s@%s" $repo .Values.controller.image.digest }}
{{- else }}
{{- printf "%s:%s" $repo (.Values.controller.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}
{{- end }}

{{/* The controller's command-line flags (see `ingressctl --help`), one list item per flag. */}}
{{- define "ingressctl.args" -}}
{{- $c := .Values.controller -}}
- --ingress-class={{ $c.ingressClass.name }}
- --nginx-configmaps={{ .Release.Namespace }}/{{ include "ingressctl.configName" . }}
{{- with $c.defaultTLS.secret }}
- --default-server-tls-secret={{ . }}
{{- end }}
{{- with $c.wildcardTLS.secret }}
- --wildcard-tls-secret={{ . }}
{{- end }}
{{- with $c.watchNamespace }}
- --watch-namespace={{ . }}
{{- end }}
- --enable-snippets={{ $c.enableSnippets }}
{{- if $c.ingressNginxCompat }}
- --ingress-nginx-compat=true
{{- end }}
- --health-status={{ $c.healthStatus }}
- --health-status-uri={{ $c.healthStatusURI }}
- --nginx-status={{ $c.nginxStatus.enable }}
{{- if $c.nginxStatus.enable }}
- --nginx-status-port={{ int $c.nginxStatus.port }}
{{- end }}
- --nginx-reload-timeout={{ int $c.nginxReloadTimeout }}
- --default-http-listener-port={{ int $c.defaultHTTPListenerPort }}
- --default-https-listener-port={{ int $c.defaultHTTPSListenerPort }}
- --ready-status={{ $c.readyStatus.enable }}
{{- if $c.readyStatus.enable }}
- --ready-status-port={{ int $c.readyStatus.port }}
{{- end }}
- --enable-prometheus-metrics={{ .Values.prometheus.create }}
{{- if .Values.prometheus.create }}
- --prometheus-metrics-listen-port={{ int .Values.prometheus.port }}
- --enable-latency-metrics={{ $c.enableLatencyMetrics }}
{{- end }}
- --report-ingress-status={{ $c.reportIngressStatus.enable }}
{{- if $c.reportIngressStatus.enable }}
{{- with include "ingressctl.externalServiceName" . }}
- --external-service={{ . }}
{{- end }}
{{- end }}
- --enable-leader-election={{ $c.reportIngressStatus.enableLeaderElection }}
{{- if $c.reportIngressStatus.enableLeaderElection }}
- --leader-election-lock-name={{ include "ingressctl.leaderElectionName" . }}
{{- end }}
- --log-format={{ $c.logFormat }}
- --log-level={{ $c.logLevel }}
{{- if $c.admissionWebhook.enable }}
- --enable-admission-webhook=true
- --admission-webhook-port={{ int $c.admissionWebhook.port }}
- --admission-webhook-tls-cert-file=/etc/ingressctl/admission-webhook/tls.crt
- --admission-webhook-tls-key-file=/etc/ingressctl/admission-webhook/tls.key
{{- end }}
{{- end }}

{{/* The admission webhook: its Service, ValidatingWebhookConfiguration, certificate Secret and CA. */}}
{{- define "ingressctl.admissionWebhook.fullname" -}}
{{- printf "%s-admission" (include "ingressctl.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ingressctl.admissionWebhook.serviceName" -}}
{{- printf "%s-admission" (include "ingressctl.controller.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Pod template shared by the Deployment and the DaemonSet. */}}
{{- define "ingressctl.podTemplate" -}}
{{- $c := .Values.controller -}}
metadata:
  labels:
    {{- include "ingressctl.selectorLabels" . | nindent 4 }}
    {{- with $c.pod.extraLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- if or .Values.prometheus.create $c.pod.annotations }}
  annotations:
    {{- if .Values.prometheus.create }}
    prometheus.io/scrape: "true"
    prometheus.io/port: {{ int .Values.prometheus.port | quote }}
    prometheus.io/scheme: {{ .Values.prometheus.scheme | quote }}
    {{- end }}
    {{- with $c.pod.annotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
spec:
  serviceAccountName: {{ include "ingressctl.serviceAccountName" . }}
  automountServiceAccountToken: true
  terminationGracePeriodSeconds: {{ int $c.terminationGracePeriodSeconds }}
  {{- with $c.podSecurityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.serviceAccount.imagePullSecrets }}
  imagePullSecrets:
    {{- range . }}
    - name: {{ . }}
    {{- end }}
  {{- end }}
  {{- with $c.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: controller
      image: {{ include "ingressctl.image" . | quote }}
      imagePullPolicy: {{ $c.image.pullPolicy }}
      args:
        {{- include "ingressctl.args" . | nindent 8 }}
      env:
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        {{- with $c.env }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      ports:
        - name: http
          containerPort: {{ int $c.defaultHTTPListenerPort }}
          protocol: TCP
          {{- if $c.hostPort.enable }}
          hostPort: {{ int $c.hostPort.http }}
          {{- end }}
        - name: https
          containerPort: {{ int $c.defaultHTTPSListenerPort }}
          protocol: TCP
          {{- if $c.hostPort.enable }}
          hostPort: {{ int $c.hostPort.https }}
          {{- end }}
        {{- if $c.readyStatus.enable }}
        - name: readiness-port
          containerPort: {{ int $c.readyStatus.port }}
          protocol: TCP
        {{- end }}
        {{- if .Values.prometheus.create }}
        - name: prometheus
          containerPort: {{ int .Values.prometheus.port }}
          protocol: TCP
        {{- end }}
        {{- if $c.admissionWebhook.enable }}
        - name: webhook
          containerPort: {{ int $c.admissionWebhook.port }}
          protocol: TCP
        {{- end }}
      {{- if $c.readyStatus.enable }}
      readinessProbe:
        httpGet:
          path: /nginx-ready
          port: readiness-port
        periodSeconds: 1
        initialDelaySeconds: {{ int $c.readyStatus.initialDelaySeconds }}
      {{- if $c.livenessProbe.enable }}
      livenessProbe:
        httpGet:
          path: /healthz
          port: readiness-port
        initialDelaySeconds: {{ int $c.livenessProbe.initialDelaySeconds }}
        periodSeconds: {{ int $c.livenessProbe.periodSeconds }}
        failureThreshold: {{ int $c.livenessProbe.failureThreshold }}
      {{- end }}
      {{- end }}
      {{- with $c.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- if $c.securityContext }}
        {{- toYaml $c.securityContext | nindent 8 }}
        {{- else }}
        runAsUser: 101
        runAsNonRoot: true
        allowPrivilegeEscalation: true
        capabilities:
          drop:
            - ALL
          add:
            - NET_BIND_SERVICE
        {{- end }}
      {{- if or $c.admissionWebhook.enable $c.volumeMounts }}
      volumeMounts:
        {{- if $c.admissionWebhook.enable }}
        - name: admission-webhook-cert
          mountPath: /etc/ingressctl/admission-webhook
          readOnly: true
        {{- end }}
        {{- with $c.volumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- end }}
  {{- if or $c.admissionWebhook.enable $c.volumes }}
  volumes:
    {{- if $c.admissionWebhook.enable }}
    - name: admission-webhook-cert
      secret:
        secretName: {{ include "ingressctl.admissionWebhook.fullname" . }}
    {{- end }}
    {{- with $c.volumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
{{- end }}

{{/* Checks across values that the schema cannot express; renders nothing. */}}
{{- define "ingressctl.validate" -}}
{{- $c := .Values.controller -}}
{{- $ports := list (int $c.defaultHTTPListenerPort) (int $c.defaultHTTPSListenerPort) -}}
{{- if $c.readyStatus.enable }}{{ $ports = append $ports (int $c.readyStatus.port) }}{{ end -}}
{{- if .Values.prometheus.create }}{{ $ports = append $ports (int .Values.prometheus.port) }}{{ end -}}
{{- if $c.nginxStatus.enable }}{{ $ports = append $ports (int $c.nginxStatus.port) }}{{ end -}}
{{- if $c.admissionWebhook.enable }}{{ $ports = append $ports (int $c.admissionWebhook.port) }}{{ end -}}
{{- if ne (len $ports) (len (uniq $ports)) }}
{{- fail (printf "the controller's ports must differ: listeners %d/%d, ready status, Prometheus, NGINX status and admission webhook ports are %s" (int $c.defaultHTTPListenerPort) (int $c.defaultHTTPSListenerPort) (toJson $ports)) }}
{{- end }}
{{- end }}
