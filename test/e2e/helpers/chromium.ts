// A real headless Chromium (Debian's package) driven over the Chrome DevTools Protocol: a small client
// on Node's own WebSocket, no puppeteer or playwright (they would download a browser of their own).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { aptGetInstall } from '../../../src/util/apt.ts';

export const CHROMIUM = '/usr/bin/chromium';

/**
 * Debian's chromium, installed with apt-get (as root) when it is missing, so that a fresh machine
 * (CI's) runs the browser tests too; elsewhere it says what to install.
 */
export function ensureChromium(log: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): string {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    throw new Error(`Chromium is not installed (${CHROMIUM} is missing): install Debian's chromium, e.g. sudo apt-get install chromium`);
  }
  log('installing chromium with apt-get (once)');
  aptGetInstall(['chromium']);
  return CHROMIUM;
}

interface CdpMessage {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { message: string };
  sessionId?: string;
}

/** One browser: pages are opened in it, everything ends with close(). */
export interface Browser {
  open(url: string, viewport?: { width: number; height: number }): Promise<Page>;
  close(): Promise<void>;
}

export interface Page {
  /** Every URL the page requested, in order. */
  readonly requests: string[];
  /** Console errors and uncaught exceptions. */
  readonly errors: string[];
  /** The value of a JavaScript expression in the page (promises awaited). */
  evaluate<T>(expression: string): Promise<T>;
  /** Polls `expression` until it is truthy; its value. */
  waitFor<T>(what: string, expression: string, timeoutMs?: number): Promise<T>;
  screenshot(file: string): Promise<void>;
}

export async function launchChromium(): Promise<Browser> {
  const executable = ensureChromium();
  const profile = mkdtempSync(path.join(tmpdir(), 'okt-chromium-'));
  const child = spawn(
    executable,
    [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check',
      // Without these Chromium reaches for Google's hosts at start (there is no network here but loopback).
      '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', '--disable-features=Translate,MediaRouter',
      '--hide-scrollbars', '--font-render-hinting=none', `--user-data-dir=${profile}`, '--remote-debugging-address=127.0.0.1', '--remote-debugging-port=0', 'about:blank',
    ],
    // Its own process group: close() can end the renderers with it.
    { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
  );
  let stderr = '';
  const endpoint = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`chromium did not start its DevTools endpoint in 30 s:\n${stderr}`)), 30_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const found = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`chromium exited (${code}) before its DevTools endpoint was up:\n${stderr}`));
    });
  }).catch(async (error: unknown) => {
    await stopProcess(child);
    rmSync(profile, { recursive: true, force: true });
    throw error;
  });

  const socket = new WebSocket(endpoint);
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener('open', () => resolve(), { once: true });
    socket.addEventListener('error', () => reject(new Error(`cannot connect to ${endpoint}`)), { once: true });
  });
  let nextId = 1;
  const waiting = new Map<number, { resolve: (result: Record<string, unknown>) => void; reject: (error: Error) => void; method: string }>();
  const listeners = new Set<(message: CdpMessage) => void>();
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as CdpMessage;
    if (message.id !== undefined) {
      const call = waiting.get(message.id);
      waiting.delete(message.id);
      if (message.error) call?.reject(new Error(`${call.method}: ${message.error.message}`));
      else call?.resolve(message.result ?? {});
      return;
    }
    for (const listener of listeners) listener(message);
  });
  socket.addEventListener('close', () => {
    for (const call of waiting.values()) call.reject(new Error(`${call.method}: the DevTools connection closed`));
    waiting.clear();
  });
  const send = (method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> => {
    const id = nextId++;
    socket.send(JSON.stringify({ id, method, params, ...(sessionId === undefined ? {} : { sessionId }) }));
    return new Promise((resolve, reject) => waiting.set(id, { resolve, reject, method }));
  };

  return {
    async open(url, viewport = { width: 1440, height: 900 }) {
      const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
      const { sessionId } = (await send('Target.attachToTarget', { targetId, flatten: true })) as { sessionId: string };
      const requests: string[] = [];
      const errors: string[] = [];
      let loaded: () => void = () => {};
      const load = new Promise<void>((resolve) => (loaded = resolve));
      listeners.add((message) => {
        if (message.sessionId !== sessionId) return;
        const params = message.params ?? {};
        if (message.method === 'Network.requestWillBeSent') requests.push((params.request as { url: string }).url);
        else if (message.method === 'Page.loadEventFired') loaded();
        else if (message.method === 'Runtime.exceptionThrown') errors.push(JSON.stringify((params.exceptionDetails as { exception?: { description?: string } }).exception?.description ?? params));
        else if (message.method === 'Runtime.consoleAPICalled' && params.type === 'error') errors.push(JSON.stringify(params.args));
        else if (message.method === 'Log.entryAdded' && (params.entry as { level: string }).level === 'error') errors.push((params.entry as { text: string }).text);
      });
      for (const domain of ['Page', 'Runtime', 'Network', 'Log']) await send(`${domain}.enable`, {}, sessionId);
      await send('Emulation.setDeviceMetricsOverride', { ...viewport, deviceScaleFactor: 1, mobile: false }, sessionId);
      await send('Page.navigate', { url }, sessionId);
      await load;
      const evaluate = async <T>(expression: string): Promise<T> => {
        const answer = (await send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true }, sessionId)) as {
          result: { value?: T }; exceptionDetails?: { exception?: { description?: string }; text: string };
        };
        if (answer.exceptionDetails) throw new Error(`in the page: ${answer.exceptionDetails.exception?.description ?? answer.exceptionDetails.text}`);
        return answer.result.value as T;
      };
      return {
        requests,
        errors,
        evaluate,
        async waitFor<T>(what: string, expression: string, timeoutMs = 15_000): Promise<T> {
          const deadline = Date.now() + timeoutMs;
          for (;;) {
            const value = await evaluate<T>(expression);
            if (value) return value;
            if (Date.now() > deadline) throw new Error(`the page did not show ${what} within ${timeoutMs} ms`);
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        },
        async screenshot(file) {
          const { data } = (await send('Page.captureScreenshot', { format: 'png' }, sessionId)) as { data: string };
          writeFileSync(file, Buffer.from(data, 'base64'));
        },
      };
    },
    async close() {
      await send('Browser.close').catch(() => undefined);
      socket.close();
      await stopProcess(child);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Waits up to 5 s for the browser to exit, then SIGKILLs its process group. */
async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  }, 5_000);
  await exited;
  clearTimeout(timer);
}
