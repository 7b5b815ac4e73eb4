import { describe, expect, test } from 'vitest';
import { startTracing, tracesUrl } from '../../src/controller/tracing.ts';

describe('where traces go', () => {
  test('a given endpoint or OTEL_EXPORTER_OTLP_ENDPOINT gains /v1/traces; the traces-specific variable is used as it is', () => {
    expect(tracesUrl('http://collector:4318/', {})).toBe('http://collector:4318/v1/traces');
    expect(tracesUrl(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBe('http://c:4318/v1/traces');
    expect(tracesUrl(undefined, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/custom', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x' })).toBe('http://c:4318/custom');
    expect(tracesUrl('http://given:1', { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://env' })).toBe('http://given:1/v1/traces');
  });

  test('nothing configured: no tracing at all', async () => {
    expect(tracesUrl(undefined, {})).toBeUndefined();
    expect(await startTracing({}, {})).toBeUndefined();
  });
});
