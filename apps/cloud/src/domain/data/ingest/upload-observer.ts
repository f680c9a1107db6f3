import type { Queryable } from '../../../infra/postgres/database.ts';
import type { UploadPart } from './upload-part.ts';
import type { UploadMetadataInput } from './upload-types.ts';

/** Capture times of one item of an upload, in microseconds since the Unix epoch. */
export interface ItemCaptureTimes {
  requestedUs: number | null;
  receivedUs: number | null;
}

/** An upload about to be committed, as observers see it (everything already validated). */
export interface IngestedUpload {
  part: UploadPart;
  metadata: UploadMetadataInput;
  /** When the cloud accepted the upload (the rows' `synced_at`). */
  syncedAtMs: number;
  /** The 24-hex file ID for binary and file uploads; undefined for tabular uploads. */
  fileId: string | undefined;
  /** Readings of a tabular upload; 1 for a binary or file upload. */
  itemCount: number;
  timesAt(index: number): ItemCaptureTimes;
  /** Tabular only: the reading's payload, parsed on demand (undefined for binary items). */
  payloadAt(index: number): unknown;
}

/** Runs inside the upload's transaction, right before COMMIT, only when the upload was stored (not a duplicate). */
export type UploadCommitStep = (tx: Queryable) => Promise<void>;

/**
 * Looks at an upload BEFORE its transaction (cheap for parts nobody observes: return undefined) and
 * returns the work that must commit with it. Listed in `CloudDeps.uploadObservers` (triggers).
 */
export type UploadObserver = (upload: IngestedUpload) => Promise<UploadCommitStep | undefined>;

/** The commit steps of every observer for this upload, as one step (undefined when none). */
export async function prepareUploadObservers(
  observers: readonly UploadObserver[] | undefined,
  upload: IngestedUpload,
): Promise<UploadCommitStep | undefined> {
  if (!observers || observers.length === 0) return undefined;
  const steps: UploadCommitStep[] = [];
  for (const observer of observers) {
    const step = await observer(upload);
    if (step) steps.push(step);
  }
  if (steps.length === 0) return undefined;
  if (steps.length === 1) return steps[0];
  return async (tx) => {
    for (const step of steps) await step(tx);
  };
}
