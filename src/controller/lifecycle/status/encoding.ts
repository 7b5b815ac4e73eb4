// How a status is stored: as the step computes it (full or lean), or encoded at the boundary with the
// API server (compact; packed, compact with what only okt reads in one string). expandStatus reads
// each back.
import type { LifecycleStatus } from '../../../kube/lifecycle-resource.ts';
import type { StatusFormat } from '../../../kube/status-format.ts';
import { encodeCompact, isCompactStatus } from './compact-format.ts';
import { isPackedStatus, packStatus } from './packed-format.ts';

export type StoredEncoding = 'plain' | 'compact' | 'packed';

/** The encoding of a status as stored. */
export function storedEncodingOf(raw: unknown): StoredEncoding {
  if (isPackedStatus(raw)) return 'packed';
  return isCompactStatus(raw) ? 'compact' : 'plain';
}

/** `status` as `format` stores it for the CR of `uid` (a status compact cannot say exactly is written lean, or packed lean). */
export function encodeStatus(status: LifecycleStatus, uid: string, format: StatusFormat): object {
  if (format === 'compact') return encodeCompact(status, uid);
  if (format === 'packed') return packStatus(encodeCompact(status, uid));
  return status;
}
