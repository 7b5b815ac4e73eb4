// A CR's status as each released okt wrote it (test/fixtures/released-status: recorded with that
// commit's own step, see its README.md), read by today's step: it keeps its meaning. At rest stays at
// rest, stalled on a failed action stays stalled until spec.retry or another desired node, a running
// operation stays that operation.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { createLifecycleModel, step, type SeenOperation, type SidecarRefusal, type SidecarView, type StepEffects } from '../../src/controller/lifecycle/step.ts';
import { parseStatus } from '../../src/controller/lifecycle/parse-status.ts';
import { encodeStatus, storedEncodingOf, type StoredEncoding } from '../../src/controller/lifecycle/status/encoding.ts';
import { findCondition } from '../../src/kube/conditions.ts';
import type { LifecycleSpec, LifecycleStatus } from '../../src/kube/lifecycle-resource.ts';
import type { StatusFormat } from '../../src/kube/status-format.ts';

const FIXTURES = new URL('../fixtures/released-status/', import.meta.url);
interface StoredResource { generation: number; spec: LifecycleSpec; status: unknown }
interface ReleasedStatus { commit: string; format: StatusFormat; resources: Record<'at-rest' | 'stalled-on-failed-action' | 'action-running', StoredResource> }
const released = readdirSync(FIXTURES).filter((f) => f.endsWith('.json')).map((f) => [f, JSON.parse(readFileSync(new URL(f, FIXTURES), 'utf8')) as ReleasedStatus] as const);
const model = createLifecycleModel(databaseGraph);

/** A CR as today's operator holds it, looked at by step() as the reconciler does (the sidecar of the fixtures' epoch, every event delivered). */
class Stored {
  generation: number;
  spec: LifecycleSpec;
  status: LifecycleStatus;
  /** The encoding the status is held in (the reconciler tells the step). */
  storedEncoding: StoredEncoding;
  readonly format: StatusFormat;
  clock = 0;
  constructor(stored: StoredResource, format: StatusFormat) {
    this.format = format;
    const status = parseStatus(stored.status, 'uid-1');
    if (status === undefined || 'invalid' in status) throw new Error(`the stored status does not parse: ${JSON.stringify(status)}`);
    this.generation = stored.generation;
    this.spec = stored.spec;
    this.status = status;
    this.storedEncoding = storedEncodingOf(stored.status);
  }

  edit(change: Partial<LifecycleSpec>): void {
    this.spec = { ...this.spec, ...change };
    this.generation += 1;
  }

  /** One look; the sidecar reports `operation` for the running one (or is refused, `refused`). */
  look(operation?: SeenOperation, refused?: SidecarRefusal): StepEffects {
    const answered: SidecarView = { kind: 'answered', epoch: 'epoch-1', observedEvents: [], observedSequence: 0, ...(operation === undefined ? {} : { operation }) };
    const effects = step({
      model,
      resource: { uid: 'uid-1', generation: this.generation, deleting: false, spec: this.spec, status: this.status },
      sidecar: refused === undefined ? answered : { kind: 'refused', ...refused },
      delivered: this.status.sequence,
      now: new Date(Date.UTC(2026, 0, 2, 0, 0, this.clock++)).toISOString(),
      outboxLimit: 64,
      statusFormat: this.format,
      storedEncoding: this.storedEncoding,
    });
    if (effects.status !== undefined) {
      this.status = JSON.parse(JSON.stringify(effects.status)) as LifecycleStatus;
      this.storedEncoding = storedEncodingOf(encodeStatus(this.status, 'uid-1', this.format));
    }
    return effects;
  }

  condition(type: string) {
    return findCondition(this.status.conditions, type);
  }
}

/** Looks until nothing is written; at most one write (okt's own shape of the same meaning) before that. */
function lookUntilQuiet(cr: Stored, operation?: SeenOperation): StepEffects[] {
  const looks = [cr.look(operation), cr.look(operation)];
  expect(looks[1]!.status, 'a second look writes nothing').toBeUndefined();
  return looks;
}

describe.each(released)('%s', (_file, fixture) => {
  test('a CR at rest stays at rest: no transition, no action, Ready; a pause on and off changes nothing else', () => {
    const cr = new Stored(fixture.resources['at-rest'], fixture.format);
    const { state, transition } = cr.status;
    for (const effects of lookUntilQuiet(cr)) expect(effects.startOperation).toBeUndefined();
    expect([cr.status.state, cr.status.transition]).toEqual([state, transition]);
    expect(cr.condition('Ready')).toMatchObject({ status: 'True', reason: 'DesiredStateReached' });
    for (const paused of [true, false]) {
      cr.edit({ paused });
      expect(cr.look().startOperation).toBeUndefined();
    }
    expect([cr.status.state, cr.status.transition]).toEqual([state, transition]);
    expect(cr.condition('Ready')?.status).toBe('True');
  });

  test('a CR stalled on a failed action stays stalled, also after a spec edit that neither retries nor moves it; spec.retry runs the action again, another desired node moves it on', () => {
    const stored = fixture.resources['stalled-on-failed-action'];
    const cr = new Stored(stored, fixture.format);
    const { state, transition } = cr.status;
    expect(cr.status.operation?.phase).toBe('Failed');
    for (const effects of lookUntilQuiet(cr)) {
      expect(effects.startOperation).toBeUndefined();
      expect(effects.again).toBeFalsy();
    }
    expect([cr.status.state, cr.status.transition]).toEqual([state, transition]);
    expect(cr.condition('Stalled')).toMatchObject({ status: 'True', reason: 'ActionFailed' });
    for (const paused of [true, false]) {
      cr.edit({ paused });
      expect(cr.look().startOperation).toBeUndefined();
    }
    expect([cr.status.state, cr.status.transition]).toEqual([state, transition]);
    expect(cr.condition('Stalled')).toMatchObject({ status: 'True', reason: 'ActionFailed' });

    // First seen while its sidecar is refused, then mended by a spec edit: still stalled on the failure.
    const refusedFirst = new Stored(stored, fixture.format);
    refusedFirst.look(undefined, { reason: 'SidecarNotAllowed', message: 'not allowed' });
    refusedFirst.edit({ sidecar: { url: 'http://sidecar.example:8080' } });
    expect(refusedFirst.look().startOperation).toBeUndefined();
    expect([refusedFirst.status.state, refusedFirst.status.transition]).toEqual([state, transition]);
    expect(refusedFirst.condition('Stalled')).toMatchObject({ status: 'True', reason: 'ActionFailed' });

    const retried = new Stored(stored, fixture.format);
    retried.look();
    retried.edit({ retry: 'again' });
    expect(retried.look().startOperation).toMatchObject({ id: 'uid-1-1.1', node: 'Running' });

    const movedOn = new Stored(stored, fixture.format);
    movedOn.look();
    movedOn.edit({ desiredState: 'Stopping' });
    movedOn.look();
    expect(movedOn.status.state).toBe('Stopping');
  });

  test('a running operation stays that operation: polled, not started again, and its end is the end of that action', () => {
    const cr = new Stored(fixture.resources['action-running'], fixture.format);
    const { state, transition } = cr.status;
    const id = cr.status.operation?.id;
    expect(cr.status.operation?.phase).toMatch(/Pending|Running/);
    for (const effects of lookUntilQuiet(cr, { phase: 'Running', events: [] })) {
      expect(effects.poll).toBe(true);
      expect(effects.startOperation).toBeUndefined();
    }
    expect([cr.status.state, cr.status.transition, cr.status.operation?.id]).toEqual([state, transition, id]);
    cr.look({ phase: 'Succeeded', events: [] });
    expect([cr.status.state, cr.status.transition, cr.status.operation?.id, cr.status.operation?.phase]).toEqual([state, transition, id, 'Succeeded']);
    expect(cr.condition('Ready')?.status).toBe('True');
  });
});
