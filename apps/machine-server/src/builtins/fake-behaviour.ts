/**
 * Test-double knobs shared by every `fake` model (documented in the attribute schemas):
 * - `build_delay_ms`: the constructor takes this long (benchmarks, timeouts);
 * - `fail_while_file_exists`: the constructor fails while this file exists (retry behaviour);
 * - `record_close_to`: on close, append `<full resource name>\n` to this file (shutdown order).
 */
import { access, appendFile } from 'node:fs/promises';
import { sleep } from '../concurrency.ts';
import { MachineError } from '../errors.ts';
import type { JsonObject } from '../json.ts';
import type { ResourceConfig } from '../resources/resource-config.ts';
import { formatResourceName } from '../resources/resource-name.ts';
import { numberAttribute, stringAttribute } from './attributes.ts';

export const fakeBehaviourKeys = ['build_delay_ms', 'fail_while_file_exists', 'record_close_to'] as const;

export const fakeBehaviourSchema: JsonObject = {
  build_delay_ms: { type: 'integer', minimum: 0, maximum: 600000, description: 'constructor delay' },
  fail_while_file_exists: { type: 'string', description: 'constructor fails while this file exists' },
  record_close_to: { type: 'string', description: 'append the resource name to this file on close' },
};

export interface FakeBehaviour {
  beforeBuild(signal: AbortSignal): Promise<void>;
  onClose(): Promise<void>;
}

export function fakeBehaviour(config: ResourceConfig): FakeBehaviour {
  const delayMs = numberAttribute(config, 'build_delay_ms', {
    min: 0,
    max: 600_000,
    fallback: 0,
    integer: true,
  });
  const failFile = stringAttribute(config, 'fail_while_file_exists');
  const closeFile = stringAttribute(config, 'record_close_to');
  const name = formatResourceName(config.resourceName);
  return {
    async beforeBuild(signal) {
      if (delayMs > 0) await sleep(delayMs, signal);
      if (failFile && (await exists(failFile))) {
        throw new MachineError('FailedPrecondition', `fake failure: ${failFile} exists`);
      }
    },
    async onClose() {
      if (closeFile) await appendFile(closeFile, `${name}\n`);
    },
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
