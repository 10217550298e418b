import { ConfigurationError } from '../errors.js'

/*
 * What turns telemetry on, read without loading any OpenTelemetry package: with nothing configured
 * the server registers no hook and imports no `@opentelemetry/*` module (see index.ts).
 */

/** Telemetry of a server (see docs/observability.md). */
export interface TelemetryOptions {
  /**
   * Traces through the OpenTelemetry SDK, exported as `OTEL_TRACES_EXPORTER` says (`otlp`, the
   * default, to `OTEL_EXPORTER_OTLP_ENDPOINT`; `console`). Default: on when an `OTEL_*` variable
   * asks for traces (see {@link tracesWanted}).
   */
  traces?: boolean
  /**
   * `GET /metrics` in the Prometheus text format, at the root of the server (`true`), or on a port
   * of its own (`{ port, host? }`). Default false (`MCP_METRICS=true` in the demo and the gateway).
   */
  metrics?: boolean | { port: number; host?: string }
  /** `service.name` when `OTEL_SERVICE_NAME` does not give one (default `mcp-pure-http`). */
  serviceName?: string
  /** Where the `OTEL_*` variables are read (default `process.env`). */
  env?: NodeJS.ProcessEnv
}

const set = (v: string | undefined): v is string => v !== undefined && v.trim() !== ''

/**
 * Whether the standard variables ask for traces: `OTEL_TRACES_EXPORTER` other than `none`, or an
 * OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), unless
 * `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`.
 */
export function tracesWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase()
  if (exporter === 'none') return false
  return set(exporter) || set(env.OTEL_EXPORTER_OTLP_ENDPOINT) || set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
}

/** Whether the standard variables ask for metrics pushed over OTLP (`OTEL_METRICS_EXPORTER=otlp`). */
export function otlpMetricsWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false
  return (env.OTEL_METRICS_EXPORTER ?? '').split(',').some((e) => e.trim().toLowerCase() === 'otlp')
}

export type OtlpProtocol = 'http/protobuf' | 'http/json'

/**
 * `OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`, else the specification's
 * default, `http/protobuf`. `grpc` is refused: this server exports over HTTP only (one dependency
 * less, and a collector takes both), and a silent fallback would send to a port that speaks gRPC.
 */
export function otlpProtocol(env: NodeJS.ProcessEnv, signal: 'TRACES' | 'METRICS'): OtlpProtocol {
  const own = env[`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`]?.trim()
  const name = own ? `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL` : 'OTEL_EXPORTER_OTLP_PROTOCOL'
  const value = (own || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || 'http/protobuf').toLowerCase()
  if (value === 'http/protobuf' || value === 'http/json') return value
  throw new ConfigurationError(`${name}="${value}": this server exports OTLP over HTTP only: use http/protobuf (the default) or http/json`)
}

/** The telemetry option the `MCP_METRICS*` settings give (the `OTEL_*` variables are read as they are). */
export function telemetryFromConfig(c: { HOST: string; MCP_METRICS: string; MCP_METRICS_PORT: number }): TelemetryOptions {
  if (c.MCP_METRICS !== 'true') return {}
  return { metrics: c.MCP_METRICS_PORT === 0 ? true : { port: c.MCP_METRICS_PORT, host: c.HOST } }
}

/** The settled telemetry of a server, or undefined when nothing is on. */
export interface SettledTelemetry {
  traces: boolean
  otlpMetrics: boolean
  metrics: false | true | { port: number; host?: string }
  serviceName: string
  env: NodeJS.ProcessEnv
}

/** `option` (or `true`/`false`) with the `OTEL_*` variables: what is on, or undefined for nothing. */
export function settleTelemetry(option: TelemetryOptions | boolean | undefined, env: NodeJS.ProcessEnv = process.env): SettledTelemetry | undefined {
  if (option === false) return undefined
  const o: TelemetryOptions = option === true ? { traces: true } : (option ?? {})
  const from = o.env ?? env
  const settled: SettledTelemetry = {
    traces: o.traces ?? tracesWanted(from),
    otlpMetrics: otlpMetricsWanted(from),
    metrics: o.metrics ?? false,
    serviceName: o.serviceName ?? 'mcp-pure-http',
    env: from
  }
  if (settled.traces && from.OTEL_TRACES_EXPORTER?.trim().toLowerCase() !== 'console') otlpProtocol(from, 'TRACES')
  if (settled.otlpMetrics) otlpProtocol(from, 'METRICS')
  return settled.traces || settled.otlpMetrics || settled.metrics !== false ? settled : undefined
}
