// The sidecar's HTTP server (fastify): protocol v1 under /v1 behind a bearer token, health, readiness
// and Prometheus metrics. Requests and answers both go through the zod schemas of the protocol;
// every 4xx is an RFC 9457 problem naming the field, and no answer ever carries a stack trace.
// Every answer carries the sidecar's epoch (header okt-sidecar-epoch; problems, operations and
// observations in their body too), so that the operator can tell a sidecar that forgot.
import { createHash, timingSafeEqual } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import Fastify, { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { z } from 'zod';
import {
  API_PREFIX,
  EPOCH_HEADER,
  GetOperationQuerySchema,
  HealthSchema,
  ObservationQuerySchema,
  ObservationSchema,
  OperationPathParamsSchema,
  OperationSchema,
  StartOperationRequestSchema,
  type Problem,
} from '../src/sidecar-client/protocol.ts';
import { readTokenFile, SidecarTokenError } from '../src/sidecar-client/token-file.ts';
import { answerClientError } from '../src/net/client-error.ts';
import { formatIssues, type SidecarConfig } from './config.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { JournalIOError } from './journal.ts';
import { journalHolder } from './journal-lock.ts';
import { OperationManager, OperationRefused } from './operations.ts';
import { GraphProbe } from './probe.ts';
import { spawner } from './spawner.ts';

export interface RunningSidecar {
  /** Base URL, e.g. http://127.0.0.1:8479 */
  readonly url: string;
  readonly operations: OperationManager;
  /** The identity of this sidecar's memory (OperationManager.epoch). */
  readonly epoch: string;
  /** Stops probes and the server; running actions are stopped and left to the journal as interrupted. */
  close(): Promise<void>;
}

export { SidecarTokenError };

/** The sidecar cannot listen where its config says (the port is taken, by another sidecar say): nothing was read or written. */
export class SidecarListenError extends Error {
  override name = 'SidecarListenError';
}

/** The token requests must carry; a short one is refused (a guessable token is no protection). */
export function readToken(file: string): string {
  return readTokenFile(file, 16);
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Constant-time check of an Authorization header against the expected token. */
export function tokenMatches(header: string | undefined, expectedDigest: Buffer): boolean {
  const match = /^Bearer (.+)$/.exec(header ?? '');
  // Compare digests, which have equal length, so timing tells nothing about the token.
  return timingSafeEqual(digest(match?.[1] ?? ''), expectedDigest) && match !== null;
}

/** Validation failure of one part of a request (params, query, body). */
class RequestInvalid extends Error {
  readonly errors: { field: string; reason: string }[];
  constructor(errors: { field: string; reason: string }[]) {
    super(errors.map((e) => `${e.field}: ${e.reason}`).join('; '));
    this.errors = errors;
  }
}

function parseInput<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const result = schema.safeParse(value ?? (where === 'body' ? undefined : {}));
  if (result.success) return result.data;
  throw new RequestInvalid(
    formatIssues(result.error).map((i) => ({ field: i.field === '(root)' ? where : `${where}.${i.field}`, reason: i.reason })),
  );
}

function sendValid<T>(reply: FastifyReply, status: number, schema: z.ZodType<T>, value: T): FastifyReply {
  return reply.code(status).type('application/json').send(JSON.stringify(schema.parse(value)));
}

const problemType = (kind: string) => `urn:okt:sidecar:problem:${kind}`;

function sendProblem(
  reply: FastifyReply,
  epoch: string | undefined,
  problem: Omit<Problem, 'type' | 'title' | 'epoch'> & { kind: string },
): FastifyReply {
  const { kind, ...rest } = problem;
  const title = STATUS_CODES[problem.status] ?? 'Error';
  const body: Problem = {
    type: problemType(kind),
    title,
    ...rest,
    instance: reply.request.url,
    ...(epoch === undefined ? {} : { epoch }),
  };
  if (body.errors?.[0] !== undefined) {
    body.field ??= body.errors[0].field;
    body.reason ??= body.errors[0].reason;
  }
  return reply.code(problem.status).type('application/problem+json').send(JSON.stringify(body));
}

function createMetrics(operations: () => OperationManager | undefined) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'okt_sidecar_' });
  const labels = ['graph', 'node'] as const;
  return {
    registry,
    started: new Counter({ name: 'okt_sidecar_operations_started_total', help: 'Actions started', labelNames: labels, registers: [registry] }),
    finished: new Counter({
      name: 'okt_sidecar_operations_finished_total',
      help: 'Operations finished, by phase and reason',
      labelNames: [...labels, 'phase', 'reason'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'okt_sidecar_operation_duration_seconds',
      help: 'From action start to journaled end',
      labelNames: labels,
      buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600, 3600],
      registers: [registry],
    }),
    requests: new Counter({
      name: 'okt_sidecar_http_requests_total',
      help: 'HTTP requests by route and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    journalSkippedLines: new Counter({
      name: 'okt_sidecar_journal_skipped_lines_total',
      help: 'Journal lines that could not be read at start (torn or damaged) and were skipped',
      registers: [registry],
    }),
    journalCompactions: new Counter({
      name: 'okt_sidecar_journal_compactions_total',
      help: 'Rewrites of the journal while running',
      registers: [registry],
    }),
    journalBytes: new Gauge({
      name: 'okt_sidecar_journal_bytes',
      help: 'Size of the journal file',
      registers: [registry],
      collect() {
        this.set(operations()?.journalStats().bytes ?? 0);
      },
    }),
    active: new Gauge({
      name: 'okt_sidecar_operations_active',
      help: 'Operations pending or running',
      registers: [registry],
      collect() {
        this.set(operations()?.active().length ?? 0);
      },
    }),
  };
}

export interface SidecarOptions {
  /**
   * The journal cannot be written (a full disk, an I/O error): the sidecar stops its probes and running
   * actions, gives the journal back, and answers 503 (`journal-failed`) to every /v1 request and to
   * /healthz and /readyz until it is closed; start one again to replay the journal. `okt sidecar`
   * exits here.
   */
  onJournalFailure?(error: JournalIOError): void;
}

export async function startSidecar(config: SidecarConfig, options: SidecarOptions = {}): Promise<RunningSidecar> {
  const expectedDigest = digest(readToken(config.tokenFile));
  let manager: OperationManager | undefined;
  let journalFailure: JournalIOError | undefined;
  // The server listens before the journal is opened (a taken port must leave the journal untouched):
  // until it is open, answers carry no epoch, and every /v1 request is a 503.
  const problem = (reply: FastifyReply, p: Parameters<typeof sendProblem>[2]) => sendProblem(reply, manager?.epoch, p);
  const app = Fastify({
    bodyLimit: config.bodyLimitBytes,
    logger: { level: config.logLevel },
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    // Operation ids may be 128 characters (fastify's default stops at 100): longer ones reach the schema, which names path.id.
    routerOptions: { maxParamLength: 1024 },
    // What fastify refuses before any route runs is a problem too, never its own JSON shape.
    frameworkErrors: (error, _request, reply) =>
      problem(reply, {
        kind: 'invalid-request',
        status: error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 414 : 400,
        detail: error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a path segment is too long' : 'the path is not a valid URL',
        field: 'path',
        reason: error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'too long' : 'not a valid URL component',
      }),
    clientErrorHandler: (error, socket) =>
      answerClientError(
        error,
        socket,
        problemType('invalid-request'),
        manager === undefined ? {} : { headers: { [EPOCH_HEADER]: manager.epoch }, fields: { epoch: manager.epoch } },
      ),
  });
  const metrics = createMetrics(() => manager);
  const probes = new Map<string, GraphProbe>();
  // On the raw server, ahead of fastify: every answer written through it carries the epoch (fastify's
  // own, like the 503 while closing, too), whatever route, hook or error produced it.
  app.server.prependListener('request', (_request: IncomingMessage, response: ServerResponse) => {
    if (manager !== undefined) response.setHeader(EPOCH_HEADER, manager.epoch);
  });
  /** The operations once the journal is open (the hook below answers 503 before). */
  const operations = () => manager as OperationManager;
  let ready = false;
  app.removeContentTypeParser('text/plain'); // the protocol is JSON only: anything else is a 415
  app.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith(`${API_PREFIX}/`)) return;
    if (!tokenMatches(request.headers.authorization, expectedDigest)) {
      reply.header('www-authenticate', 'Bearer realm="okt-sidecar"');
      return problem(reply, {
        kind: 'unauthorized',
        status: 401,
        detail: request.headers.authorization === undefined ? 'a bearer token is required' : 'the bearer token is wrong',
        field: 'header.authorization',
        reason: request.headers.authorization === undefined ? 'missing' : 'does not match',
      });
    }
    if (journalFailure !== undefined) {
      return problem(reply, {
        kind: 'journal-failed',
        status: 503,
        detail: `${journalFailure.message}: this sidecar has stopped its actions; start it again to replay its journal`,
      });
    }
    if (manager === undefined) return problem(reply, { kind: 'starting', status: 503, detail: 'the sidecar is opening its journal' });
  });
  app.addHook('onResponse', async (request, reply) => {
    metrics.requests.inc({ method: request.method, route: request.routeOptions.url ?? 'unknown', status: reply.statusCode });
  });

  app.setNotFoundHandler((request, reply) =>
    problem(reply, {
      kind: 'not-found',
      status: 404,
      detail: `no route ${request.method} ${request.url.split('?')[0]}`,
    }),
  );
  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof RequestInvalid) {
      return problem(reply, {
        kind: 'invalid-request',
        status: 400,
        detail: error.message,
        errors: error.errors,
      });
    }
    if (error instanceof OperationRefused) {
      const extra = {
        ...(error.field === undefined ? {} : { field: error.field, reason: error.message }),
        ...(error.activeOperations === undefined ? {} : { activeOperations: error.activeOperations }),
      };
      return problem(reply, { kind: error.kind, status: error.status, detail: error.message, ...extra });
    }
    if (error instanceof JournalIOError) {
      // A start whose acceptance could not be journaled: refused, as every request after it is.
      return problem(reply, { kind: 'journal-failed', status: 503, detail: error.message });
    }
    const fastifyError = error as { statusCode?: number; code?: string; message?: string };
    const status = fastifyError.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const field = fastifyError.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 'header.content-type' : 'body';
      const detail =
        fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
          ? `the body is larger than ${config.bodyLimitBytes} bytes`
          : (fastifyError.message ?? 'bad request');
      return problem(reply, {
        kind: fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? 'body-too-large' : 'invalid-request',
        status,
        detail,
        errors: [{ field, reason: detail }],
      });
    }
    request.log.error({ err: error }, 'request failed');
    return problem(reply, {
      kind: 'internal',
      status: status >= 500 && status < 600 ? status : 500,
      detail: 'the sidecar could not handle this request; see its log',
    });
  });

  // A failed journal fails liveness too: in a Pod, the kubelet restarts the container, which replays it.
  app.get('/healthz', (_req, reply) =>
    journalFailure === undefined
      ? sendValid(reply, 200, HealthSchema, { status: 'ok' })
      : sendValid(reply, 503, HealthSchema, { status: 'failed' }),
  );
  app.get('/readyz', (_req, reply) => {
    const status = journalFailure !== undefined ? 'failed' : ready ? 'ok' : 'starting';
    return sendValid(reply, status === 'ok' ? 200 : 503, HealthSchema, { status });
  });
  app.get('/metrics', async (_req, reply) =>
    reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
  );
  app.get(`${API_PREFIX}/openapi.json`, (_req, reply) => reply.send(buildOpenApiDocument()));

  app.put(`${API_PREFIX}/operations/:id`, async (request, reply) => {
    const { id } = parseInput(OperationPathParamsSchema, request.params, 'path');
    const body = parseInput(StartOperationRequestSchema, request.body, 'body');
    const { operation, created } = await operations().start(id, body);
    reply.header('location', `${API_PREFIX}/operations/${encodeURIComponent(id)}`);
    return sendValid(reply, created ? 202 : 200, OperationSchema, operation);
  });
  app.get(`${API_PREFIX}/operations/:id`, async (request, reply) => {
    const { id } = parseInput(OperationPathParamsSchema, request.params, 'path');
    const { wait } = parseInput(GetOperationQuerySchema, request.query, 'query');
    const operation = await operations().wait(id, wait ?? 0);
    if (operation === undefined) throw new OperationRefused(404, 'not-found', `no operation ${id}`);
    return sendValid(reply, 200, OperationSchema, operation);
  });
  app.post(`${API_PREFIX}/operations/:id/cancel`, async (request, reply) => {
    const { id } = parseInput(OperationPathParamsSchema, request.params, 'path');
    return sendValid(reply, 200, OperationSchema, await operations().cancel(id));
  });
  app.get(`${API_PREFIX}/observation`, async (request, reply) => {
    const query = parseInput(ObservationQuerySchema, request.query, 'query');
    const graph = query.graph ?? operations().defaultGraph();
    const probe = graph === undefined ? undefined : probes.get(graph);
    if (graph === undefined || probe === undefined) {
      throw new OperationRefused(
        422,
        'unknown-graph',
        graph === undefined ? 'this sidecar serves several graphs: name one' : `no graph "${graph}" is configured`,
        { field: 'query.graph' },
      );
    }
    return sendValid(reply, 200, ObservationSchema, {
      epoch: operations().epoch,
      epochAgeMs: Math.max(0, Date.now() - Date.parse(operations().epochCreatedAt)),
      ...probe.observation(query.since ?? 0, operations().active(graph)),
    });
  });

  try {
    await app.listen({ host: config.listen.host, port: config.listen.port });
  } catch (error) {
    await app.close();
    const address = `${config.listen.host}:${config.listen.port}`;
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw new SidecarListenError(`cannot listen on ${address}: ${(error as Error).message}`);
    const holder = journalHolder(config.journal);
    throw new SidecarListenError(
      `${address} is in use by another process` +
        (holder === undefined ? '' : ` (the okt sidecar of pid ${holder} holds this config's journal ${config.journal})`),
    );
  }
  let closing: Promise<void> | undefined;
  /** Stops probes and actions and gives the journal back (once): at close, or when the journal fails. */
  const stopWork = () =>
    (closing ??= (async () => {
      ready = false;
      await Promise.all([...probes.values()].map((p) => p.stop()));
      await operations().close(); // ends running actions, which also answers the long-polls waiting on them
      spawner.release();
    })());

  try {
    manager = await OperationManager.open(config, {
      onStarted(op) {
        metrics.started.inc({ graph: op.graph, node: op.node });
        app.log.info({ operation: op.id, graph: op.graph, node: op.node, attempt: op.attempts }, 'action started');
      },
      onFinished(op, ms) {
        metrics.finished.inc({ graph: op.graph, node: op.node, phase: op.phase, reason: op.reason ?? '' });
        metrics.duration.observe({ graph: op.graph, node: op.node }, ms / 1000);
        app.log.info({ operation: op.id, phase: op.phase, events: op.events, reason: op.reason }, 'action finished');
        void probes.get(op.graph)?.probeNow();
      },
      onJournalFailure(error) {
        app.log.fatal({ journal: config.journal, err: error.message }, 'journal failed');
        // Nothing done from now on could be journaled: stop doing, and say so on every answer.
        journalFailure = error;
        options.onJournalFailure?.(error);
        void stopWork();
      },
      onJournalCompacted(stats) {
        metrics.journalCompactions.inc();
        app.log.debug({ journal: config.journal, ...stats }, 'journal compacted');
      },
    });
  } catch (error) {
    await app.close();
    throw error;
  }
  spawner.retain();
  const epoch = manager.epoch;
  const skippedLines = manager.journalSkippedLines;
  metrics.journalSkippedLines.inc(skippedLines);
  app.log[skippedLines > 0 ? 'warn' : 'info'](
    { epoch, journal: config.journal, newEpoch: manager.epochIsNew, skippedLines },
    skippedLines > 0 ? `journal opened; ${skippedLines} unreadable line(s) skipped` : 'journal opened',
  );
  for (const [graph, graphConfig] of Object.entries(config.graphs)) {
    probes.set(
      graph,
      new GraphProbe({
        graph,
        probe: graphConfig.probe,
        baseDir: config.baseDir,
        killGraceMs: config.killGraceMs,
        isIdle: () => operations().active(graph).length === 0,
        record: (event) => operations().recordObserved(graph, event),
        restored: operations().observedEvents(graph),
      }),
    );
  }
  for (const probe of probes.values()) probe.start();
  ready = true;
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.listen.port;
  const host = config.listen.host.includes(':') ? `[${config.listen.host}]` : config.listen.host;

  return {
    url: `http://${host}:${port}`,
    operations: manager,
    epoch,
    async close() {
      await stopWork();
      await app.close();
    },
  };
}
