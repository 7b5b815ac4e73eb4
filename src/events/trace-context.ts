// W3C trace context in and out of OpenTelemetry spans: what a CloudEvent's `traceparent` carries.
import { context, trace, type Context, type Span } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

const w3c = new W3CTraceContextPropagator();

/** The W3C `traceparent` of a span (what a CloudEvent or an HTTP request carries). */
export function traceparentOf(span: Span): string {
  const carrier: Record<string, string> = {};
  w3c.inject(trace.setSpan(context.active(), span), carrier, { set: (c, k, v) => (c[k] = v) });
  return carrier.traceparent ?? '';
}

/** The context whose parent is the span a `traceparent` names (an invalid one gives the root context). */
export function contextOf(traceparent: string | undefined): Context {
  if (traceparent === undefined) return context.active();
  return w3c.extract(context.active(), { traceparent }, { get: (c, k) => c[k as 'traceparent'], keys: (c) => Object.keys(c) });
}

