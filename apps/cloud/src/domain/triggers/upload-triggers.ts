import type { Queryable } from '../../infra/postgres/database.ts';
import { microsToIso } from '../data/ingest/capture-time.ts';
import type { IngestedUpload, UploadObserver } from '../data/ingest/upload-observer.ts';
import type { UploadDataType } from '../data/ingest/upload-types.ts';
import type { Clock } from '../shared/clock.ts';
import { fireTrigger } from './fire-trigger.ts';
import type { PartTriggersCache } from './part-triggers.ts';
import type { DataCaptureMethod, TriggerConfig, TriggerDataType } from './trigger-config.ts';
import type { IngestedDataFacts } from './trigger-delivery.ts';
import { firstReadingMeetingEvals } from './trigger-evals.ts';

/**
 * part_data_ingested and conditional_data_ingested for every committed upload (tabular, binary, file).
 * Decides BEFORE the upload's transaction which triggers fire (a cached lookup: nothing more for parts
 * without data triggers) and returns the step that records their deliveries right before COMMIT.
 */
export function createUploadTriggers(db: Queryable, cache: PartTriggersCache, clock: Clock): UploadObserver {
  return async (upload) => {
    const triggers = await cache.forPart(db, upload.part);
    const ingested = triggers.part_data_ingested;
    const conditional = triggers.conditional_data_ingested;
    if (ingested.length === 0 && conditional.length === 0) return undefined;
    const firing: { trigger: TriggerConfig; facts: IngestedDataFacts }[] = [];
    const dataType = triggerDataTypeOf(upload.metadata.dataType);
    const tabular = upload.fileId === undefined;
    let base: IngestedDataFacts | undefined;
    const baseFacts = () => {
      base ??= uploadFacts(upload, dataType, tabular);
      return base;
    };
    for (const trigger of ingested) {
      if (trigger.dataTypes.includes(dataType)) firing.push({ trigger, facts: baseFacts() });
    }
    for (const trigger of conditional) {
      const condition = trigger.conditional;
      if (!condition || !capturedBy(condition.method, upload)) continue;
      const triggerCondition = { evals: condition.evals };
      if (!tabular) {
        // Binary/file data has no readings to test: only a trigger without evals fires (every sync).
        if (condition.evals.length === 0)
          firing.push({ trigger, facts: { ...baseFacts(), triggerCondition } });
        continue;
      }
      const index = firstReadingMeetingEvals(upload.itemCount, upload.payloadAt, condition.evals);
      if (index < 0) continue;
      firing.push({ trigger, facts: { ...baseFacts(), data: readingData(upload, index), triggerCondition } });
    }
    if (firing.length === 0) return undefined;
    const occurredAt = new Date(upload.syncedAtMs);
    return async (tx) => {
      const now = new Date(clock.nowMs());
      for (const { trigger, facts } of firing) {
        await fireTrigger(tx, upload.part, trigger, { kind: 'data', data: facts }, occurredAt, now);
      }
    };
  };
}

/** The upload metadata's type as the trigger names it (the metadata as sent; not inferred). */
export function triggerDataTypeOf(type: UploadDataType): TriggerDataType {
  switch (type) {
    case 'tabular-sensor':
      return 'tabular';
    case 'binary-sensor':
      return 'binary';
    case 'file':
      return 'file';
    default:
      return 'unspecified';
  }
}

/**
 * Does the upload come from the trigger's `<component-type>:<component-name>:<method>`? The component
 * type compares loosely by its last segment, case-insensitively (`sensor` matches `rdk:component:sensor`);
 * the name exactly; the method case-insensitively.
 */
export function capturedBy(method: DataCaptureMethod, upload: Pick<IngestedUpload, 'metadata'>): boolean {
  const { componentType, componentName, methodName } = upload.metadata;
  return (
    componentName === method.componentName &&
    methodName.toLowerCase() === method.method.toLowerCase() &&
    lastSegment(componentType) === lastSegment(method.componentType)
  );
}

function lastSegment(type: string): string {
  return type
    .slice(type.lastIndexOf(':') + 1)
    .trim()
    .toLowerCase();
}

/** Facts of the whole upload: component, method, data type, file ID and its received-time range. */
function uploadFacts(upload: IngestedUpload, dataType: TriggerDataType, tabular: boolean): IngestedDataFacts {
  const syncedUs = upload.syncedAtMs * 1000;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (let index = 0; index < upload.itemCount; index++) {
    const times = upload.timesAt(index);
    const received = times.receivedUs ?? times.requestedUs ?? syncedUs;
    if (received < min) min = received;
    if (received > max) max = received;
  }
  if (!Number.isFinite(min)) min = max = syncedUs;
  const facts: IngestedDataFacts = {
    componentName: upload.metadata.componentName,
    componentType: upload.metadata.componentType,
    methodName: upload.metadata.methodName,
    dataType,
    minTimeReceived: microsToIso(min),
    maxTimeReceived: microsToIso(max),
  };
  if (upload.fileId !== undefined) facts.fileId = upload.fileId;
  // part_data_ingested with tabular data: the last reading of the upload.
  if (tabular && upload.itemCount > 0) facts.data = readingData(upload, upload.itemCount - 1);
  return facts;
}

function readingData(upload: IngestedUpload, index: number): IngestedDataFacts['data'] {
  const times = upload.timesAt(index);
  const synced = microsToIso(upload.syncedAtMs * 1000);
  const payload = upload.payloadAt(index);
  return {
    metadata: {
      received_at: times.receivedUs === null ? synced : microsToIso(times.receivedUs),
      requested_at: times.requestedUs === null ? synced : microsToIso(times.requestedUs),
    },
    data:
      payload !== null && typeof payload === 'object' && !Array.isArray(payload)
        ? (payload as Record<string, unknown>)
        : { value: payload },
  };
}
