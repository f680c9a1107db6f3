/**
 * The running collectors of a data manager, reconciled against the wanted capture methods: `apply`
 * starts collectors that are new, restarts those whose settings changed and stops those no longer
 * wanted (the capture control sensor changes the wanted set at run time). Statistics survive restarts.
 */
import type { Clock } from '../clock.ts';
import type { Logger } from '../logging/logger.ts';
import type { Resource } from '../resources/resource.ts';
import { formatApi, formatResourceName, shortName } from '../resources/resource-name.ts';
import { type CaptureMethodConfig, minimumCaptureFrequencyHz } from './capture-method-config.ts';
import { captureMethodNames, findCaptureMethod } from './capture-methods.ts';
import { type Collector, type CollectorStats, startCollector } from './collector.ts';

/** A resource with capture methods configured on it. */
export interface CaptureTarget {
  readonly resource: Resource;
  readonly methods: readonly CaptureMethodConfig[];
}

export interface CaptureSetOptions {
  readonly captureDir: string;
  /** Service tags: when set they replace every method's tags. */
  readonly serviceTags: readonly string[];
  readonly maxFileSizeBytes: number;
  readonly clock: Clock;
  readonly logger: Logger;
}

export interface CaptureSet {
  apply(targets: readonly CaptureTarget[]): Promise<void>;
  flush(): Promise<void>;
  close(): Promise<void>;
  readonly size: number;
  stats(): CollectorStats;
}

interface Running {
  collector: Collector;
  signature: string;
}

export function createCaptureSet(options: CaptureSetOptions): CaptureSet {
  const running = new Map<string, Running>();
  const retired = { captured: 0, failed: 0 };
  /** Problems already reported, so a re-apply with the same config does not log them again. */
  const reported = new Set<string>();

  const report = (key: string, log: () => void) => {
    if (reported.has(key)) return;
    reported.add(key);
    log();
  };

  const retire = async (key: string) => {
    const entry = running.get(key);
    if (!entry) return;
    running.delete(key);
    await entry.collector.close();
    const stats = entry.collector.stats();
    retired.captured += stats.captured;
    retired.failed += stats.failed;
  };

  const wanted = (targets: readonly CaptureTarget[]) => {
    const result = new Map<string, { resource: Resource; method: CaptureMethodConfig; signature: string }>();
    for (const target of targets) {
      const resourceKey = formatResourceName(target.resource.name);
      for (const method of target.methods) {
        if (method.disabled) continue;
        const key = `${resourceKey}\0${method.method}\0${JSON.stringify(method.additionalParams)}`;
        if (method.captureFrequencyHz < minimumCaptureFrequencyHz) {
          report(`zero\0${key}`, () =>
            options.logger.warn('capture frequency is zero; collector disabled', {
              resource: resourceKey,
              method: method.method,
              field: `${method.path}.capture_frequency_hz`,
            }),
          );
          continue;
        }
        if (!findCaptureMethod(target.resource, method.method)) {
          report(`unknown\0${key}`, () =>
            options.logger.error(
              `${method.path}.method: ${formatApi(target.resource.name.api)} has no capture method ${JSON.stringify(method.method)} (available: ${captureMethodNames(target.resource).join(', ')})`,
            ),
          );
          continue;
        }
        const signature = JSON.stringify([
          method.captureFrequencyHz,
          method.tags,
          method.captureQueueSize,
          method.captureBufferSize,
        ]);
        result.set(key, { resource: target.resource, method, signature });
      }
    }
    return result;
  };

  const start = (resource: Resource, method: CaptureMethodConfig): Collector => {
    const captureMethod = findCaptureMethod(resource, method.method);
    if (!captureMethod) throw new Error(`no capture method ${method.method}`);
    return startCollector({
      resource,
      componentType: formatApi(resource.name.api),
      componentName: shortName(resource.name),
      methodName: method.method,
      captureMethod,
      frequencyHz: method.captureFrequencyHz,
      additionalParams: method.additionalParams,
      tags: options.serviceTags.length > 0 ? options.serviceTags : method.tags,
      captureDir: options.captureDir,
      queueSize: method.captureQueueSize,
      bufferSizeBytes: method.captureBufferSize,
      maxFileSizeBytes: options.maxFileSizeBytes,
      clock: options.clock,
      logger: options.logger.child('collector'),
    });
  };

  // apply/close run one at a time.
  let queue: Promise<unknown> = Promise.resolve();
  const serialized = (operation: () => Promise<void>): Promise<void> => {
    const result = queue.then(operation);
    queue = result.catch(() => {});
    return result;
  };

  return {
    get size() {
      return running.size;
    },
    apply: (targets) =>
      serialized(async () => {
        const next = wanted(targets);
        const stale = [...running.entries()]
          .filter(([key, entry]) => {
            const want = next.get(key);
            return !want || want.signature !== entry.signature || want.resource !== entry.collector.resource;
          })
          .map(([key]) => key);
        await Promise.all(stale.map(retire));
        for (const [key, want] of next) {
          if (running.has(key)) continue;
          running.set(key, { collector: start(want.resource, want.method), signature: want.signature });
        }
      }),
    flush: async () => {
      await Promise.all([...running.values()].map((entry) => entry.collector.flush()));
    },
    close: () => serialized(async () => Promise.all([...running.keys()].map(retire)).then(() => {})),
    stats() {
      let captured = retired.captured;
      let failed = retired.failed;
      for (const entry of running.values()) {
        const stats = entry.collector.stats();
        captured += stats.captured;
        failed += stats.failed;
      }
      return { captured, failed };
    },
  };
}
