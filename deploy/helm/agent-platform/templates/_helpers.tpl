{{/* Names and labels. */}}
{{- define "ap.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ap.fullname" -}}
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

{{- define "ap.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ap.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ap.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "ap.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "ap.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ap.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The namespace of sandbox pods (K8S_SANDBOX_NAMESPACE). */}}
{{- define "ap.sandboxNamespace" -}}
{{- default .Release.Namespace .Values.executor.k8s.namespace -}}
{{- end -}}

{{- define "ap.sandboxServiceAccount" -}}
{{- printf "%s-sandbox" (include "ap.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ap.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "ap.sandboxImage" -}}
{{- printf "%s:%s" .Values.executor.k8s.image.repository (default .Chart.AppVersion .Values.executor.k8s.image.tag) -}}
{{- end -}}

{{/* NATS_URL: the chart's own NATS (the dependency's client Service) or the external one. */}}
{{- define "ap.natsUrl" -}}
{{- if .Values.nats.enabled -}}
{{- $natsName := default "nats" .Values.nats.nameOverride -}}
{{- $natsFull := .Values.nats.fullnameOverride | default (ternary .Release.Name (printf "%s-%s" .Release.Name $natsName) (contains $natsName .Release.Name)) -}}
{{- printf "nats://%s.%s.svc:4222" ($natsFull | trunc 63 | trimSuffix "-") .Release.Namespace -}}
{{- else -}}
{{- required "nats.url is required when nats.enabled is false (or set nats.enabled=true)" .Values.nats.url -}}
{{- end -}}
{{- end -}}

{{- define "ap.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .key }}
      {{- if .optional }}
      optional: true
      {{- end }}
{{- end -}}

{{/* A whole number from YAML arrives as a float: print it as 100000, not 1e+05. */}}
{{- define "ap.plainEnv" -}}
{{- $value := .value -}}
{{- if and (kindIs "float64" $value) (eq $value (floor $value)) -}}
{{- $value = int64 $value -}}
{{- end -}}
- name: {{ .name }}
  value: {{ $value | toString | quote }}
{{- end -}}

{{/*
The environment of one role's container. Every role gets the same settings (a setting means the
same in every process) except ROLES and the NATS credentials of the gateway. Secrets only by
reference (secretKeyRef): no value of a Secret is ever rendered into a manifest.
Argument: dict "root" $ "role" <name>.
*/}}
{{- define "ap.env" -}}
{{- $ := .root -}}
{{- $v := $.Values -}}
{{- $role := .role -}}
{{- $r := index $v.roles $role -}}
{{- $roles := $role -}}
{{- if and (ne $role "gateway") $v.probes.gatewayInEveryPod -}}
{{- $roles = printf "%s,gateway" $role -}}
{{- end -}}
{{- include "ap.plainEnv" (dict "name" "ROLES" "value" $roles) }}
{{ include "ap.plainEnv" (dict "name" "NODE_ENV" "value" "production") }}
{{ include "ap.plainEnv" (dict "name" "HOST" "value" "0.0.0.0") }}
{{ include "ap.plainEnv" (dict "name" "PORT" "value" $v.containerPort) }}
{{ include "ap.plainEnv" (dict "name" "LOG_LEVEL" "value" $v.platform.logLevel) }}
{{ include "ap.plainEnv" (dict "name" "DOMAIN" "value" (required "platform.domain is required (DOMAIN)" $v.platform.domain)) }}
{{ include "ap.plainEnv" (dict "name" "SUPERADMIN_EMAIL" "value" (required "platform.superadminEmail is required (SUPERADMIN_EMAIL)" $v.platform.superadminEmail)) }}
{{ include "ap.plainEnv" (dict "name" "AUTH_MODE" "value" $v.platform.authMode) }}
{{- with $v.platform.publicBaseUrl }}
{{ include "ap.plainEnv" (dict "name" "PUBLIC_BASE_URL" "value" .) }}
{{- end }}
{{- with $v.platform.trustedProxies }}
{{ include "ap.plainEnv" (dict "name" "TRUSTED_PROXIES" "value" .) }}
{{- end }}
{{- with $v.platform.corsOrigins }}
{{ include "ap.plainEnv" (dict "name" "CORS_ORIGINS" "value" .) }}
{{- end }}
{{ include "ap.plainEnv" (dict "name" "NATS_URL" "value" (include "ap.natsUrl" $)) }}
{{- with $v.platform.natsPrefix }}
{{ include "ap.plainEnv" (dict "name" "NATS_PREFIX" "value" .) }}
{{- end }}
{{- $natsSecret := $v.nats.auth.existingSecret -}}
{{- if and (eq $role "gateway") $v.nats.auth.gatewayExistingSecret -}}
{{- $natsSecret = $v.nats.auth.gatewayExistingSecret -}}
{{- end -}}
{{- if eq $v.nats.auth.type "userPassword" }}
{{ include "ap.secretEnv" (dict "name" "NATS_USER" "secret" (required "nats.auth.existingSecret is required for nats.auth.type userPassword" $natsSecret) "key" "NATS_USER") }}
{{ include "ap.secretEnv" (dict "name" "NATS_PASSWORD" "secret" $natsSecret "key" "NATS_PASSWORD") }}
{{- else if eq $v.nats.auth.type "token" }}
{{ include "ap.secretEnv" (dict "name" "NATS_TOKEN" "secret" (required "nats.auth.existingSecret is required for nats.auth.type token" $natsSecret) "key" "NATS_TOKEN") }}
{{- else if eq $v.nats.auth.type "nkey" }}
{{ include "ap.plainEnv" (dict "name" "NATS_NKEY_FILE" "value" (printf "/etc/agent-platform/nats/%s" $v.nats.auth.fileKey)) }}
{{- else if eq $v.nats.auth.type "creds" }}
{{ include "ap.plainEnv" (dict "name" "NATS_CREDS_FILE" "value" (printf "/etc/agent-platform/nats/%s" $v.nats.auth.fileKey)) }}
{{- else if ne $v.nats.auth.type "none" }}
{{- fail "nats.auth.type must be one of none, userPassword, token, nkey, creds" }}
{{- end }}
{{- $s := required "secrets.existingSecret is required (a Secret holding SECRET_KEY and ENCRYPTION_KEY)" $v.secrets.existingSecret }}
{{ include "ap.secretEnv" (dict "name" "SECRET_KEY" "secret" $s "key" $v.secrets.keys.secretKey) }}
{{ include "ap.secretEnv" (dict "name" "ENCRYPTION_KEY" "secret" $s "key" $v.secrets.keys.encryptionKey) }}
{{ include "ap.secretEnv" (dict "name" "ENCRYPTION_KEY_PREVIOUS" "secret" $s "key" $v.secrets.keys.encryptionKeyPrevious "optional" true) }}
{{ include "ap.secretEnv" (dict "name" "SUPERADMIN_PASSWORD" "secret" $s "key" $v.secrets.keys.superadminPassword "optional" true) }}
{{- $db := required "database.existingSecret is required (a Secret holding DATABASE_URL and DATABASE_PASSWORD)" $v.database.existingSecret }}
{{ include "ap.secretEnv" (dict "name" "DATABASE_URL" "secret" $db "key" $v.database.urlKey) }}
{{ include "ap.secretEnv" (dict "name" "DATABASE_PASSWORD" "secret" $db "key" $v.database.passwordKey) }}
{{- with $v.platform.smtp }}
{{- if .host }}
{{ include "ap.plainEnv" (dict "name" "SMTP_HOST" "value" .host) }}
{{ include "ap.plainEnv" (dict "name" "SMTP_PORT" "value" .port) }}
{{ include "ap.plainEnv" (dict "name" "SMTP_USER" "value" .user) }}
{{ include "ap.plainEnv" (dict "name" "SMTP_DOMAIN" "value" .domain) }}
{{ include "ap.secretEnv" (dict "name" "SMTP_PASSWORD" "secret" $s "key" $v.secrets.keys.smtpPassword "optional" true) }}
{{- end }}
{{- end }}
{{- with $v.executor }}
{{ include "ap.plainEnv" (dict "name" "SANDBOX_EXECUTOR" "value" .mode) }}
{{ include "ap.plainEnv" (dict "name" "SANDBOX_DRIVER" "value" .driver) }}
{{ include "ap.plainEnv" (dict "name" "TRUSTED_EXECUTOR" "value" .trusted) }}
{{ include "ap.plainEnv" (dict "name" "DEFAULT_WORKER_COUNT" "value" .sharedWorkers) }}
{{ include "ap.plainEnv" (dict "name" "FUNCTION_TIMEOUT" "value" .function.timeoutSeconds) }}
{{ include "ap.plainEnv" (dict "name" "MAX_FUNCTION_MEMORY" "value" .function.memoryMb) }}
{{ include "ap.plainEnv" (dict "name" "MAX_FUNCTION_CPU" "value" .function.cpu) }}
{{ include "ap.plainEnv" (dict "name" "MAX_FUNCTION_STORAGE" "value" .function.storage) }}
{{ include "ap.plainEnv" (dict "name" "SANDBOX_TMP_MB" "value" .function.tmpMb) }}
{{ include "ap.plainEnv" (dict "name" "SANDBOX_SHM_MB" "value" .function.shmMb) }}
{{ include "ap.plainEnv" (dict "name" "SANDBOX_MAX_PROCESSES" "value" .function.maxProcesses) }}
{{ include "ap.plainEnv" (dict "name" "ALLOW_PACKAGE_INSTALLATION" "value" .allowPackageInstallation) }}
{{- with .allowedPackages }}
{{ include "ap.plainEnv" (dict "name" "ALLOWED_PACKAGES" "value" .) }}
{{- end }}
{{ include "ap.plainEnv" (dict "name" "SANDBOX_MIN_SIZE" "value" .pool.minSize) }}
{{ include "ap.plainEnv" (dict "name" "SANDBOX_MAX_SIZE" "value" .pool.maxSize) }}
{{ include "ap.plainEnv" (dict "name" "SANDBOX_MIN_IDLE" "value" .pool.minIdle) }}
{{ include "ap.plainEnv" (dict "name" "SANDBOX_MAX_EXECUTIONS" "value" .pool.maxExecutions) }}
{{- if eq .mode "k8s_pod" }}
{{ include "ap.plainEnv" (dict "name" "K8S_SANDBOX_IMAGE" "value" (include "ap.sandboxImage" $)) }}
{{ include "ap.plainEnv" (dict "name" "K8S_SANDBOX_NAMESPACE" "value" (include "ap.sandboxNamespace" $)) }}
{{ include "ap.plainEnv" (dict "name" "K8S_SANDBOX_SERVICE_ACCOUNT" "value" (include "ap.sandboxServiceAccount" $)) }}
{{ include "ap.plainEnv" (dict "name" "K8S_SANDBOX_POD_READY_TIMEOUT" "value" .k8s.podReadyTimeoutSeconds) }}
{{ include "ap.plainEnv" (dict "name" "K8S_RELEASE_NAME" "value" $.Release.Name) }}
{{ include "ap.plainEnv" (dict "name" "K8S_SANDBOX_NODE_SELECTOR" "value" (toJson .k8s.nodeSelector)) }}
{{ include "ap.plainEnv" (dict "name" "K8S_SANDBOX_TOLERATIONS" "value" (toJson .k8s.tolerations)) }}
{{ include "ap.plainEnv" (dict "name" "K8S_SANDBOX_AFFINITY" "value" (toJson .k8s.affinity)) }}
{{- end }}
{{- end }}
{{- if $v.analytics.enabled }}
{{ include "ap.plainEnv" (dict "name" "ANALYTICS_HOST" "value" (required "analytics.host is required with analytics.enabled" $v.analytics.host)) }}
{{ include "ap.plainEnv" (dict "name" "ANALYTICS_PORT" "value" $v.analytics.port) }}
{{ include "ap.plainEnv" (dict "name" "ANALYTICS_USER" "value" $v.analytics.user) }}
{{ include "ap.plainEnv" (dict "name" "ANALYTICS_DATABASE" "value" $v.analytics.database) }}
{{ include "ap.plainEnv" (dict "name" "ANALYTICS_RETENTION_DAYS" "value" $v.analytics.retentionDays) }}
{{ include "ap.plainEnv" (dict "name" "ANALYTICS_HOT_RETENTION_DAYS" "value" $v.analytics.hotRetentionDays) }}
{{- with $v.analytics.existingSecret }}
{{ include "ap.secretEnv" (dict "name" "ANALYTICS_PASSWORD" "secret" . "key" $v.analytics.passwordKey) }}
{{- end }}
{{- end }}
{{- range $name, $value := $v.platform.extraEnv }}
{{ include "ap.plainEnv" (dict "name" $name "value" $value) }}
{{- end }}
{{- range $name, $value := $r.extraEnv }}
{{ include "ap.plainEnv" (dict "name" $name "value" $value) }}
{{- end }}
{{- end -}}

{{/* CONSOLE_API_URL: the gateways' Service of this release, by its in-cluster name. */}}
{{- define "ap.consoleApiUrl" -}}
{{- if not .Values.roles.gateway.enabled -}}
{{- fail "roles.console needs roles.gateway: the console proxies to the gateways' Service (or set roles.console.enabled=false)" -}}
{{- end -}}
{{- printf "http://%s-gateway.%s.svc:%v" (include "ap.fullname" .) .Release.Namespace .Values.service.port -}}
{{- end -}}

{{/* The console's Ingress host: ingress.console.host, else console.<platform.domain>. */}}
{{- define "ap.consoleHost" -}}
{{- .Values.ingress.console.host | default (printf "console.%s" (required "platform.domain is required" .Values.platform.domain)) -}}
{{- end -}}

{{/*
The environment of the console's container (ROLES=console): only what the console reads. No
NATS, no database, no secret (a console-only process needs none: src/kernel/config.ts).
DOMAIN and PUBLIC_BASE_URL give the API's public origin (the only one its CSP lets frame a
component preview); TRUSTED_PROXIES (console.trustedProxies, else platform.trustedProxies: the
ingress controller) lets it believe X-Forwarded-Proto, mark its cookies Secure behind a
TLS-terminating ingress and pass the browser's address on to the gateways.
*/}}
{{- define "ap.consoleEnv" -}}
{{- $ := . -}}
{{- $v := $.Values -}}
{{- include "ap.plainEnv" (dict "name" "ROLES" "value" "console") }}
{{ include "ap.plainEnv" (dict "name" "NODE_ENV" "value" "production") }}
{{ include "ap.plainEnv" (dict "name" "HOST" "value" "0.0.0.0") }}
{{ include "ap.plainEnv" (dict "name" "CONSOLE_PORT" "value" $v.console.containerPort) }}
{{ include "ap.plainEnv" (dict "name" "CONSOLE_API_URL" "value" (include "ap.consoleApiUrl" $)) }}
{{ include "ap.plainEnv" (dict "name" "LOG_LEVEL" "value" $v.platform.logLevel) }}
{{ include "ap.plainEnv" (dict "name" "DOMAIN" "value" (required "platform.domain is required (DOMAIN)" $v.platform.domain)) }}
{{- with $v.platform.publicBaseUrl }}
{{ include "ap.plainEnv" (dict "name" "PUBLIC_BASE_URL" "value" .) }}
{{- end }}
{{- with ($v.console.trustedProxies | default $v.platform.trustedProxies) }}
{{ include "ap.plainEnv" (dict "name" "TRUSTED_PROXIES" "value" .) }}
{{- end }}
{{- range $name, $value := $v.platform.extraEnv }}
{{ include "ap.plainEnv" (dict "name" $name "value" $value) }}
{{- end }}
{{- range $name, $value := $v.roles.console.extraEnv }}
{{ include "ap.plainEnv" (dict "name" $name "value" $value) }}
{{- end }}
{{- end -}}
