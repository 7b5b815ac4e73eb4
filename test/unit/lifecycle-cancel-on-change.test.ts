// A node's running action cancelled when spec.desiredState moves away (`cancellable: true`, or
// `cancellable: { onDesiredChange: true }`), and kept when its node does not allow it.
import { describe, expect, test } from 'vitest';
import { defineGraph, loadGraph, type NodeDefinition } from '../../src/graph/index.ts';
import { findCondition } from '../../src/kube/conditions.ts';
import { LIFECYCLE_EVENT_TYPES } from '../../src/events/types.ts';
import type { StepEffects } from '../../src/controller/lifecycle/step.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';

type Node = 'Start' | 'Running' | 'Backup' | 'Stopping' | 'End';

/** Running -> Backup (a long backup) or Stopping; Backup goes back to Running or on to Stopping. */
function backupGraph(cancellable: NodeDefinition<Node>['cancellable']) {
  return defineGraph({
    name: 'db',
    entry: 'Start',
    nodes: {
      Start: { children: ['Running'] },
      Running: { children: ['Backup', 'Stopping'] },
      Backup: { children: ['Running', 'Stopping'], ...(cancellable === undefined ? {} : { cancellable }) },
      Stopping: { children: ['End'] },
      End: {},
    },
  });
}

const conditionOf = (sim: LifecycleSim, type: string) => findCondition(sim.status?.conditions ?? [], type);

/** A CR resting Ready at Running, then sent to Backup: its backup runs (the sidecar has not finished it). */
function backupRunning(cancellable: NodeDefinition<Node>['cancellable']): LifecycleSim {
  const sim = new LifecycleSim(backupGraph(cancellable), 'Running');
  sim.settle();
  sim.setDesired('Backup');
  sim.reconcile();
  expect(sim.status?.operation).toMatchObject({ node: 'Backup', phase: 'Pending', desiredAtStart: 'Backup' });
  return sim;
}

/** The effects of `looks` reconciles during which no action ends unless it is cancelled. */
function looksWhileRunning(sim: LifecycleSim, looks: number): StepEffects[] {
  return Array.from({ length: looks }, () => sim.reconcile({ finishRunning: false }));
}

describe('a change of spec.desiredState while a cancellable action runs', () => {
  test.each([[true], [{ onDesiredChange: true }]] as const)('cancellable: %j: one cancel, then the move to the new desired node, Ready there, no stall', (cancellable) => {
    const sim = backupRunning(cancellable);
    const backup = sim.status!.operation!.id;
    sim.setDesired('Running');
    const effects = looksWhileRunning(sim, 5);
    expect(effects.flatMap((e) => (e.cancelOperation === undefined ? [] : [e.cancelOperation]))).toEqual([backup]);
    // Recorded with the write that goes with the cancellation, before it is sent.
    expect(effects[0]?.status).toMatchObject({ operation: { id: backup, cancelRequestedFor: 'Running' } });
    sim.settle();
    expect(sim.status?.state).toBe('Running');
    expect(sim.status?.path.slice(-3)).toEqual(['Running', 'Backup', 'Running']);
    expect(conditionOf(sim, 'Ready')).toMatchObject({ status: 'True', reason: 'DesiredStateReached' });
    expect(conditionOf(sim, 'Stalled')?.status).toBe('False');
    const ended = sim.events.find((e) => e.type === LIFECYCLE_EVENT_TYPES.actionFailed);
    expect(ended?.data).toMatchObject({ operation: { id: backup, phase: 'Cancelled', message: 'cancelled: spec.desiredState moved to Running' } });
    expect(sim.events.some((e) => e.type === LIFECYCLE_EVENT_TYPES.stalled)).toBe(false);
    expect([...sim.started.values()].every((op) => op.starts === 1)).toBe(true);
    expect([...sim.started.values()].filter((op) => op.node === 'Backup')).toHaveLength(1);
  });

  test('the conditions say the action is being cancelled while the sidecar has not ended it', () => {
    const sim = backupRunning(true);
    sim.setDesired('Stopping');
    sim.reconcile({ finishRunning: false });
    expect(conditionOf(sim, 'Ready')).toMatchObject({ status: 'False', reason: 'Progressing' });
    expect(conditionOf(sim, 'Ready')?.message).toContain('is being cancelled, spec.desiredState moved');
    sim.settle();
    expect(sim.status?.state).toBe('Stopping');
  });

  test.each([[undefined], [false], [{ onDelete: true }]] as const)('cancellable: %j: the action is waited for, then the resource moves on', (cancellable) => {
    const sim = backupRunning(cancellable);
    const backup = sim.status!.operation!.id;
    sim.setDesired('Running');
    for (let i = 0; i < 3; i++) expect(sim.reconcile({ finishRunning: false }).cancelOperation).toBeUndefined();
    expect(sim.status?.state).toBe('Backup');
    expect(sim.status?.operation?.cancelRequestedFor).toBeUndefined();
    sim.settle();
    expect(sim.status?.state).toBe('Running');
    expect(sim.events.find((e) => e.type === LIFECYCLE_EVENT_TYPES.actionSucceeded && (e.data.operation as { id: string }).id === backup)).toBeDefined();
  });

  test('a node entered on the way to the desired node is no change of mind: its action is not cancelled', () => {
    // From Running, End is two moves away through Backup or Stopping: Backup, first in priority, is taken.
    const graph = defineGraph({
      name: 'db',
      entry: 'Start',
      nodes: { Start: { children: ['Running'] }, Running: { children: ['Backup', 'Stopping'] }, Backup: { children: ['Running', 'End'], cancellable: true }, Stopping: { children: ['End'] }, End: {} },
    });
    const sim = new LifecycleSim(graph, 'Running');
    sim.settle();
    sim.setDesired('End');
    sim.reconcile();
    expect(sim.status?.operation).toMatchObject({ node: 'Backup', desiredAtStart: 'End' });
    expect(sim.reconcile({ finishRunning: false }).cancelOperation).toBeUndefined();
    // Another node than the one it was entered for is a change of mind.
    sim.setDesired('Stopping');
    expect(sim.reconcile({ finishRunning: false }).cancelOperation).toBe(sim.status?.operation?.id);
    sim.settle();
    expect(sim.status?.path.slice(-3)).toEqual(['Backup', 'Running', 'Stopping']);
  });

  test('a desired node the running node cannot reach cancels nothing: the action ends, then the resource stalls UnreachableState', () => {
    const graph = defineGraph({
      name: 'db',
      entry: 'Start',
      nodes: { Start: { children: ['Running'] }, Running: { children: ['Stopping'] }, Stopping: { children: ['End'], cancellable: true }, End: {} },
    });
    const sim = new LifecycleSim(graph, 'Stopping');
    sim.spec = { ...sim.spec, onLeaf: 'Keep' };
    sim.reconcile();
    sim.reconcile();
    expect(sim.status?.operation).toMatchObject({ node: 'Stopping', phase: 'Pending' });
    sim.setDesired('Running');
    expect(sim.reconcile({ finishRunning: false }).cancelOperation).toBeUndefined();
    sim.settle();
    expect(sim.status?.operation?.phase).toBe('Succeeded');
    expect(conditionOf(sim, 'Stalled')).toMatchObject({ status: 'True', reason: 'UnreachableState' });
  });

  test('paused, a change of mind cancels nothing', () => {
    const sim = backupRunning(true);
    sim.setSpec({ desiredState: 'Running', paused: true });
    expect(sim.reconcile({ finishRunning: false }).cancelOperation).toBeUndefined();
    sim.setSpec({ paused: false });
    expect(sim.reconcile({ finishRunning: false }).cancelOperation).toBe(sim.status?.operation?.id);
  });

  test('taken back before the cancellation landed: the node is wanted after all, so its action runs again under the next id, then Ready there', () => {
    const sim = backupRunning(true);
    const backup = sim.status!.operation!.id;
    sim.setDesired('Running');
    expect(sim.reconcile({ finishRunning: false }).cancelOperation).toBe(backup);
    sim.setDesired('Backup');
    const effects = sim.reconcile({ finishRunning: false });
    expect(sim.status?.state).toBe('Backup');
    expect(effects.startOperation).toMatchObject({ id: `${backup}.1`, node: 'Backup' });
    expect(sim.status?.operation).toMatchObject({ id: `${backup}.1`, desiredAtStart: 'Backup' });
    sim.settle();
    expect(conditionOf(sim, 'Ready')).toMatchObject({ status: 'True', reason: 'DesiredStateReached' });
    expect(sim.started.get(backup)?.starts).toBe(1);
  });

  test('taken back before the cancellation was asked: nothing is cancelled', () => {
    const sim = backupRunning(true);
    sim.setDesired('Running');
    sim.setDesired('Backup');
    expect(sim.reconcile({ finishRunning: false }).cancelOperation).toBeUndefined();
    sim.settle();
    expect(sim.status?.operation).toMatchObject({ node: 'Backup', phase: 'Succeeded' });
  });

  test('an action committed but never started is not started once the desired node moved away: it ends Cancelled and the resource moves on', () => {
    const sim = new LifecycleSim(backupGraph({ onDesiredChange: true }), 'Running');
    sim.settle();
    sim.setDesired('Backup');
    sim.reconcile({ startOperation: false });
    const backup = sim.status!.operation!.id;
    sim.setDesired('Running');
    const effects = sim.reconcile({ finishRunning: false });
    expect(effects.startOperation?.node).toBe('Running');
    expect(sim.status?.state).toBe('Running');
    expect(sim.started.has(backup)).toBe(false);
  });
});

describe('deletion and the cancellable cases', () => {
  test.each([
    [true, true],
    [{ onDelete: true }, true],
    [{ onDesiredChange: true }, false],
  ] as const)('cancellable: %j: deletion cancels the running action: %s', (cancellable, cancels) => {
    const sim = backupRunning(cancellable);
    const backup = sim.status!.operation!.id;
    sim.delete();
    expect(sim.reconcile({ finishRunning: false }).cancelOperation).toBe(cancels ? backup : undefined);
    sim.settle();
    expect(sim.status?.state).toBe('End');
    expect(sim.status?.path.slice(-3)).toEqual(['Backup', 'Stopping', 'End']);
    expect(sim.events.some((e) => e.type === LIFECYCLE_EVENT_TYPES.stalled)).toBe(false);
  });
});

describe('a migration while a cancellable action runs', () => {
  test('the desired node it was started for is renamed with the graph: a renamed desired node is no change of mind', () => {
    const nodes = (end: string, formerly?: string[]) => ({
      Start: { children: ['Running'] },
      Running: { children: ['Backup', 'Stopping'] },
      Backup: { children: ['Running', end], cancellable: true },
      Stopping: { children: [end] },
      [end]: formerly === undefined ? {} : { formerly },
    });
    const v1 = loadGraph({ name: 'db', entry: 'Start', nodes: nodes('End') });
    const v2 = loadGraph({ name: 'db', entry: 'Start', nodes: nodes('Finished', ['End']) });
    const sim = new LifecycleSim(v1, 'End');
    sim.spec = { ...sim.spec, onLeaf: 'Keep' };
    sim.reconcile();
    sim.reconcile();
    expect(sim.status?.operation).toMatchObject({ node: 'Backup', desiredAtStart: 'End' });
    sim.upgrade(v2);
    expect(sim.reconcile({ finishRunning: false }).cancelOperation).toBeUndefined();
    expect(sim.status?.operation).toMatchObject({ node: 'Backup', desiredAtStart: 'Finished' });
    sim.settle();
    expect(sim.status?.state).toBe('Finished');
  });
});
