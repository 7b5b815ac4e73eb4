// The sidecar config: defaults, ${VAR} expansion, errors that name the field, and the token compare.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { expandEnv, parseSidecarConfig, SidecarConfigError } from '../../sidecar/config.ts';
import { tokenMatches } from '../../sidecar/server.ts';

const minimal = { tokenFile: 't', journal: 'j', graphs: { g: { nodes: { A: { command: { argv: ['true'] } } } } } };

describe('sidecar config', () => {
  it('applies safe defaults and resolves paths against the config directory', () => {
    const config = parseSidecarConfig(minimal, '/etc/okt');
    expect(config.listen).toEqual({ host: '127.0.0.1', port: 8479 });
    expect(config.maxActiveOperations).toBe(1);
    expect(config.tokenFile).toBe('/etc/okt/t');
    expect(config.journal).toBe('/etc/okt/j');
    expect(config.graphs.g?.nodes.A).toMatchObject({ onSuccess: [], idempotent: false });
  });

  it('moves on by itself only when onSuccess says so', () => {
    const nodes = { A: { command: { argv: ['true'] }, onSuccess: ['DefaultState'] }, B: { command: { argv: ['true'] } } };
    const config = parseSidecarConfig({ ...minimal, graphs: { g: { nodes } } }, '/');
    expect(config.graphs.g?.nodes.A?.onSuccess).toEqual(['DefaultState']);
    expect(config.graphs.g?.nodes.B?.onSuccess).toEqual([]);
  });

  it('names the field and the reason of every problem', () => {
    const bad = {
      ...minimal,
      bodyLimitBytes: -1,
      graphs: { g: { nodes: { A: { command: { argv: [] } }, '1x': { command: { argv: ['x'] } } } } },
    };
    let message = '';
    try {
      parseSidecarConfig(bad, '/');
    } catch (error) {
      expect(error).toBeInstanceOf(SidecarConfigError);
      message = (error as Error).message;
    }
    expect(message).toMatch(/bodyLimitBytes: /);
    expect(message).toMatch(/graphs\.g\.nodes/);
  });

  it('names a misspelt key, what is expected there and the key meant, and every other problem in the same message', () => {
    const typos = {
      ...minimal,
      lisen: { port: 1 },
      graphs: {
        g: {
          nodes: {
            A: { comand: { argv: ['true'] }, timeoutMs: 0 },
            B: { command: { argv: ['true'], cwdd: '/' } },
            C: { http: { url: 'http://127.0.0.1:1/' }, module: { path: 'x.mjs' } },
            D: { module: { pth: 'x.mjs' } },
          },
        },
      },
    };
    expect(() => parseSidecarConfig(typos, '/')).toThrow(
      new SidecarConfigError(
        [
          'invalid sidecar config:',
          '  graphs.g.nodes.A: needs one of command, http, module',
          '  graphs.g.nodes.A.timeoutMs: Too small: expected number to be >0',
          '  graphs.g.nodes.A.comand: unknown key; did you mean command? (expected: command, http, module, timeoutMs, onSuccess, onFailure, idempotent)',
          '  graphs.g.nodes.B.command.cwdd: unknown key; did you mean cwd? (expected: argv, env, cwd)',
          '  graphs.g.nodes.C: needs exactly one of command, http, module; it has http, module',
          '  graphs.g.nodes.D.module.path: missing: expected string',
          '  graphs.g.nodes.D.module.pth: unknown key; did you mean path? (expected: path, export)',
          '  lisen: unknown key; did you mean listen? (expected: listen, tokenFile, journal, bodyLimitBytes, maxActiveOperations, retainOperations, journalCompactionBytes, outputTailLines, killGraceMs, logLevel, graphs)',
        ].join('\n'),
      ),
    );
  });

  it('refuses a probe with both or neither of command and http', () => {
    const probe = { command: { argv: ['x'] }, http: { url: 'http://127.0.0.1:1/' } };
    expect(() => parseSidecarConfig({ ...minimal, graphs: { g: { probe, nodes: {} } } }, '/')).toThrow(/exactly one/);
  });

  it('expands ${NAME} and ${NAME:-default}, and names a missing variable', () => {
    expect(expandEnv({ a: ['${X}/${Y:-d}'] }, { X: 'x' })).toEqual({ a: ['x/d'] });
    expect(() => expandEnv({ a: { b: '${NOPE}' } }, {})).toThrow(/a\.b: environment variable NOPE/);
  });

  it('expansion leaves strings without ${...} unchanged', () => {
    fc.assert(
      fc.property(fc.string().filter((s) => !s.includes('${')), (s) => expandEnv(s, {}) === s),
    );
  });

  it('accepts only the exact bearer token', () => {
    const expected = createHash('sha256').update('secret-token-123456').digest();
    expect(tokenMatches('Bearer secret-token-123456', expected)).toBe(true);
    expect(tokenMatches('Bearer secret-token-12345', expected)).toBe(false);
    expect(tokenMatches('secret-token-123456', expected)).toBe(false);
    expect(tokenMatches(undefined, expected)).toBe(false);
    fc.assert(fc.property(fc.string(), (t) => tokenMatches(`Bearer ${t}`, expected) === (t === 'secret-token-123456')));
  });
});
