// Whether the objects of a node are ready: kstatus's rules (sigs.k8s.io/cli-utils/pkg/kstatus/status)
// by default, a declaration's own `ready(live)` instead where it has one. Pure: read-readiness.ts reads
// the live objects (from the owned objects' caches).
import type { KubernetesObject } from '@kubernetes/client-node';
import { apiGroup, type GraphObject } from '../../../graph/index.ts';

/** kstatus's verdict on one live object. */
export type Readiness = { readonly kind: 'ready' } | { readonly kind: 'inProgress' | 'failed'; readonly message: string };

/** One object of a node, as events name it. */
export interface ObjectRef {
  readonly id: string;
  readonly kind: string;
  readonly name: string;
}

/** The verdict on a node's objects: the first failed one (`ref`: which, when it is one object), else the first not ready, else ready. */
export type NodeReadiness =
  | { readonly kind: 'ready' }
  | { readonly kind: 'inProgress' | 'failed'; readonly object: string; readonly message: string; readonly ref?: ObjectRef };

const READY: Readiness = { kind: 'ready' };
export const inProgress = (message: string): Readiness => ({ kind: 'inProgress', message });
const failed = (message: string): Readiness => ({ kind: 'failed', message });

interface LiveCondition {
  type?: unknown;
  status?: unknown;
  reason?: unknown;
  message?: unknown;
}
type Live = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

/** A live object's readiness as kstatus computes it: its kind's rules, else a Ready condition, else ready. */
export function kstatusReadiness(live: KubernetesObject): Readiness {
  const object = live as Live;
  const status = object.status ?? {};
  const observed = status['observedGeneration'];
  const generation = object.metadata?.generation;
  if (typeof observed === 'number' && typeof generation === 'number' && observed < generation) {
    return inProgress(`${object.kind} generation is ${generation}, but latest observed generation is ${observed}`);
  }
  // kstatus's generic conditions (the "abnormal-true" pair), before any kind's rules.
  if (conditionOf(object, 'Stalled')?.status === 'True') return failed(reasonOf(conditionOf(object, 'Stalled')!, 'Stalled'));
  if (conditionOf(object, 'Reconciling')?.status === 'True') return inProgress(reasonOf(conditionOf(object, 'Reconciling')!, 'Reconciling'));
  const rules = KIND_RULES[`${apiGroup(object.apiVersion ?? '')}/${object.kind ?? ''}`];
  if (rules !== undefined) return rules(object, status);
  const ready = conditionOf(object, 'Ready');
  if (ready !== undefined && ready.status !== 'True') return inProgress(reasonOf(ready, 'Ready condition is not True'));
  return READY;
}

/** One declared object's readiness: its declaration's predicate where it has one, else kstatus's. */
export function objectReadiness(declaration: Pick<GraphObject, 'ready'>, live: KubernetesObject): Readiness {
  if (declaration.ready === undefined) return kstatusReadiness(live);
  return declaration.ready(live) ? READY : inProgress('its ready predicate says not yet');
}

/** The node's verdict from its objects' in order of declaration: a failed one wins over one in progress. */
export function nodeReadiness(objects: readonly { readonly name: string; readonly readiness: Readiness; readonly ref?: ObjectRef }[]): NodeReadiness {
  const first = objects.find((o) => o.readiness.kind === 'failed') ?? objects.find((o) => o.readiness.kind === 'inProgress');
  if (first === undefined || first.readiness.kind === 'ready') return { kind: 'ready' };
  const verdict = { kind: first.readiness.kind, object: first.name, message: first.readiness.message };
  return first.ref === undefined ? verdict : { ...verdict, ref: first.ref };
}

type KindRule = (object: Live, status: Record<string, unknown>) => Readiness;

const KIND_RULES: Readonly<Record<string, KindRule>> = {
  'apps/Deployment': deploymentReadiness,
  'apps/StatefulSet': statefulSetReadiness,
  'batch/Job': jobReadiness,
  '/PersistentVolumeClaim': (_, status) => (status['phase'] === 'Bound' ? READY : inProgress(`PVC is not Bound. phase: ${String(status['phase'] ?? 'Pending')}`)),
  '/Pod': podReadiness,
  '/Service': serviceReadiness,
};

function deploymentReadiness(object: Live, status: Record<string, unknown>): Readiness {
  const progressing = conditionOf(object, 'Progressing');
  if (progressing?.reason === 'ProgressDeadlineExceeded') return failed('Progress deadline exceeded');
  const wanted = numberAt(object.spec, 'replicas', 1);
  const updated = numberAt(status, 'updatedReplicas', 0);
  const replicas = numberAt(status, 'replicas', 0);
  const available = numberAt(status, 'availableReplicas', 0);
  const ready = numberAt(status, 'readyReplicas', 0);
  if (updated < wanted) return inProgress(`Updated: ${updated}/${wanted}`);
  if (replicas > updated) return inProgress(`Pending termination: ${replicas - updated}`);
  if (available < updated) return inProgress(`Available: ${available}/${updated}`);
  if (ready < wanted) return inProgress(`Ready: ${ready}/${wanted}`);
  if (progressing !== undefined && (progressing.status !== 'True' || progressing.reason !== 'NewReplicaSetAvailable')) return inProgress('ReplicaSet not Available');
  if (conditionOf(object, 'Available')?.status === 'False') return inProgress('Deployment not Available');
  return READY;
}

function statefulSetReadiness(object: Live, status: Record<string, unknown>): Readiness {
  const wanted = numberAt(object.spec, 'replicas', 1);
  const ready = numberAt(status, 'readyReplicas', 0);
  const current = numberAt(status, 'currentReplicas', 0);
  const updated = numberAt(status, 'updatedReplicas', 0);
  const strategy = object.spec?.['updateStrategy'] as { type?: string; rollingUpdate?: { partition?: number } } | undefined;
  const partition = strategy?.rollingUpdate?.partition ?? 0;
  if (numberAt(status, 'replicas', 0) > wanted) return inProgress(`Pending termination: ${numberAt(status, 'replicas', 0) - wanted}`);
  if (ready < wanted) return inProgress(`Ready: ${ready}/${wanted}`);
  if (strategy?.type === 'OnDelete') return READY;
  if (partition > 0) return updated < wanted - partition ? inProgress(`updated: ${updated}/${wanted - partition}`) : READY;
  if (current < wanted) return inProgress(`current: ${current}/${wanted}`);
  if (status['updateRevision'] !== undefined && status['currentRevision'] !== status['updateRevision']) return inProgress(`Waiting for updated revision ${String(status['updateRevision'])} to be current`);
  return READY;
}

function jobReadiness(object: Live): Readiness {
  const failedCondition = conditionOf(object, 'Failed');
  if (failedCondition?.status === 'True') return failed(`Job Failed${typeof failedCondition.message === 'string' && failedCondition.message !== '' ? `: ${failedCondition.message}` : ''}`);
  if (conditionOf(object, 'Complete')?.status === 'True') return READY;
  return inProgress('Job in progress');
}

function podReadiness(object: Live, status: Record<string, unknown>): Readiness {
  const phase = status['phase'];
  if (phase === 'Succeeded') return READY;
  if (phase === 'Failed') return failed(`Pod has failed${typeof status['message'] === 'string' ? `: ${status['message']}` : ''}`);
  if (phase === 'Running' && conditionOf(object, 'Ready')?.status === 'True') return READY;
  return inProgress(`Pod phase is ${String(phase ?? 'Pending')}`);
}

function serviceReadiness(object: Live, status: Record<string, unknown>): Readiness {
  if (object.spec?.['type'] !== 'LoadBalancer') return READY;
  const ingress = (status['loadBalancer'] as { ingress?: unknown[] } | undefined)?.ingress ?? [];
  return ingress.length > 0 ? READY : inProgress('LoadBalancer has no ingress yet');
}

function conditionOf(object: Live, type: string): LiveCondition | undefined {
  const conditions = object.status?.['conditions'];
  return Array.isArray(conditions) ? (conditions as LiveCondition[]).find((c) => c?.type === type) : undefined;
}

function reasonOf(condition: LiveCondition, fallback: string): string {
  return typeof condition.message === 'string' && condition.message !== '' ? condition.message : typeof condition.reason === 'string' ? condition.reason : fallback;
}

function numberAt(record: Record<string, unknown> | undefined, key: string, fallback: number): number {
  const value = record?.[key];
  return typeof value === 'number' ? value : fallback;
}
