import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * The answer to a request Node's HTTP parser refused (broken framing, an unknown method, a head too
 * large, a timeout): an RFC 9457 problem like every other refusal, then the connection closes.
 * For `server.on('clientError')` (or fastify's clientErrorHandler), which has no response object.
 * `extra` adds headers to the answer and fields to the problem (the sidecar's epoch, say).
 */
export function answerClientError(
  error: Error & { code?: string },
  socket: Duplex,
  problemType: string,
  extra: { headers?: Record<string, string>; fields?: Record<string, unknown> } = {},
): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // Node's own rule: never write into an answer already under way on this connection.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (socket.writable && inFlight?.headersSent !== true) {
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const title = STATUS_CODES[status] ?? 'Bad Request';
    const detail = status === 408 ? 'the request did not arrive in time' : status === 431 ? 'the request head is too large' : `the request is not valid HTTP/1.1 (${error.code ?? 'parse error'})`;
    const body = JSON.stringify({ type: problemType, title, status, detail, field: status === 431 ? 'headers' : 'request', ...extra.fields });
    const headers = Object.entries(extra.headers ?? {}).map(([name, value]) => `${name}: ${value}\r\n`).join('');
    socket.write(`HTTP/1.1 ${status} ${title}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${headers}Connection: close\r\n\r\n${body}`);
  }
  socket.destroy();
}
