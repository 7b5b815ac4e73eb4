// OpenTelemetry traces of a lifecycle: the reconcile that commits a transition (a root span), the
// sidecar start of its action and the action's run (as the sidecar timed it), and the delivery of each
// CloudEvent it committed, whose `traceparent` is that reconcile's. Exported over OTLP/HTTP when
// configured; otherwise nothing is recorded (the API's no-op tracer), and the SDK is not even loaded
// (about 0.1 s of CPU at every start of the operator or `import 'okt'`).
import type { Tracer } from '@opentelemetry/api';

export interface TracingOptions {
  /**
   * The OTLP/HTTP endpoint: a base URL (`http://collector:4318`, traces go to `/v1/traces`). Default:
   * the environment's OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as it is) or OTEL_EXPORTER_OTLP_ENDPOINT.
   */
  endpoint?: string;
  /** The `service.name` of the spans. Default OTEL_SERVICE_NAME, else `okt-operator`. */
  serviceName?: string;
}

export interface Tracing {
  readonly tracer: Tracer;
  /** Sends what is buffered and stops. */
  shutdown(): Promise<void>;
}

const NAME = 'okt';

/** Tracing when an endpoint is configured (given, or in the environment), else undefined. */
export async function startTracing(options: TracingOptions = {}, env: NodeJS.ProcessEnv = process.env): Promise<Tracing | undefined> {
  const url = tracesUrl(options.endpoint, env);
  if (url === undefined) return undefined;
  const [{ OTLPTraceExporter }, { resourceFromAttributes }, { BatchSpanProcessor, TracerProvider }] = await Promise.all([
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace'),
  ]);
  const exporter = new OTLPTraceExporter({ url });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName ?? env.OTEL_SERVICE_NAME ?? 'okt-operator' }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 500 })],
  });
  return { tracer: provider.getTracer(NAME), shutdown: () => provider.shutdown() };
}

/** The URL spans are POSTed to: a base endpoint gains `/v1/traces`, the traces-specific one is used as it is. */
export function tracesUrl(endpoint: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  if (endpoint !== undefined) return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
  if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (env.OTEL_EXPORTER_OTLP_ENDPOINT) return `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`;
  return undefined;
}
