// OpenTelemetry traces over OTLP/HTTP, received by a real OTLP/HTTP (JSON) receiver this test starts:
// the reconcile that commits a transition is a root span; the sidecar start of the node's action, the
// action's run and the delivery of the transition's CloudEvent are its children; and the CloudEvent's
// `traceparent` names that reconcile's span, so a consumer continues the same trace.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { createLogger } from '../../src/controller/index.ts';
import { startOperator, type RunningOperator } from '../../src/controller/lifecycle/index.ts';
import { createLifecycleEventReceiver, LIFECYCLE_EVENT_TYPES, type LifecycleEvent } from '../../src/events/index.ts';
import { createNamespace, e2eKubeConfig, waitFor } from './helpers/index.ts';
import { conditionOf, DATABASES, databases, installDatabaseCrd, startNoopSidecar, waitForDatabase } from './helpers/lifecycle.ts';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: { stringValue?: string; intValue?: string } }[];
}

const kc = e2eKubeConfig();
const spans: OtlpSpan[] = [];
const contentTypes = new Set<string>();
const events: LifecycleEvent[] = [];
let otlp: Server;
let otlpUrl: string;
let sidecar: Awaited<ReturnType<typeof startNoopSidecar>>;
let receiver: Awaited<ReturnType<typeof createLifecycleEventReceiver>>;
let operator: RunningOperator;
let namespace: string;

beforeAll(async () => {
  await installDatabaseCrd(kc);
  namespace = await createNamespace(kc, 'okt-traces');
  // OTLP/HTTP: POST /v1/traces, an ExportTraceServiceRequest (JSON encoding), answered 200.
  otlp = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
      contentTypes.add(String(req.headers['content-type']));
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
      for (const r of body.resourceSpans) for (const s of r.scopeSpans) spans.push(...s.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => otlp.listen(0, '127.0.0.1', resolve));
  const address = otlp.address();
  otlpUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  receiver = await createLifecycleEventReceiver({ onEvent: (event) => void events.push(event) });
  sidecar = await startNoopSidecar();
  operator = await startOperator({
    kubeConfig: kc,
    graph: databaseGraph,
    resource: DATABASES,
    namespace,
    sidecar: { url: sidecar.url, token: sidecar.token },
    events: { sink: receiver.url },
    tracing: { endpoint: otlpUrl, serviceName: 'okt-e2e' },
    logger: createLogger({ level: 'silent' }),
  });
});

afterAll(async () => {
  await operator?.stop();
  await sidecar?.close();
  await receiver?.close();
  await new Promise((r) => otlp?.close(r));
});

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value?.stringValue ?? value?.intValue;
};

test('a transition is one trace: the committing reconcile, the sidecar start, the action, the CloudEvent delivery; the event carries its traceparent', async () => {
  await databases(kc).create(namespace, 'traced', { desiredState: 'Running', onLeaf: 'Keep' });
  await waitForDatabase(kc, namespace, 'traced', 'Ready at Running', (o) => conditionOf(o, 'Ready')?.status === 'True');
  const transition = await waitFor('the transition event at the sink', async () => events.find((e) => e.type === LIFECYCLE_EVENT_TYPES.transition && e.data?.to === 'Running'), 10_000, 20);
  // Stopping flushes the spans still buffered.
  await operator.stop();

  const root = spans.find((s) => s.name === 'okt.transition database Start -> Running');
  expect(root, `spans: ${spans.map((s) => s.name).join(', ')}`).toBeDefined();
  expect(root!.parentSpanId ?? '').toBe('');
  expect(attribute(root!, 'okt.resource')).toBe(`${namespace}/traced`);
  expect(attribute(root!, 'okt.from')).toBe('Start');
  expect(attribute(root!, 'okt.to')).toBe('Running');
  const children = spans.filter((s) => s.traceId === root!.traceId && s.parentSpanId === root!.spanId).map((s) => s.name);
  expect(children).toEqual(expect.arrayContaining([
    'okt.sidecar.start Running',
    'okt.action Running',
    `okt.event.deliver ${LIFECYCLE_EVENT_TYPES.transition}`,
    `okt.event.deliver ${LIFECYCLE_EVENT_TYPES.actionStarted}`,
  ]));
  const action = spans.find((s) => s.name === 'okt.action Running' && s.traceId === root!.traceId)!;
  expect(attribute(action, 'okt.phase')).toBe('Succeeded');
  expect(BigInt(action.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(action.startTimeUnixNano));
  expect(transition.traceparent).toBe(`00-${root!.traceId}-${root!.spanId}-01`);
  expect([...contentTypes]).toEqual(['application/json']);
});
