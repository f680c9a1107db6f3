/**
 * `-cpuprofile FILE`: the V8 CPU profile of the whole run (Chrome DevTools `.cpuprofile` JSON with
 * `nodes`, `samples`, `timeDeltas`). The file is created at start, so an unwritable path is refused
 * before the machine starts rather than lost at the end.
 */
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { MachineError } from '../errors.ts';

export interface CpuProfile {
  /** Stops profiling and writes the file. */
  finish(): Promise<void>;
}

export async function startCpuProfile(file: string): Promise<CpuProfile> {
  try {
    await writeFile(file, '');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new MachineError(
      'InvalidArgument',
      `-cpuprofile: cannot write ${JSON.stringify(file)} (${reason})`,
    );
  }
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async finish() {
      const { profile } = await session.post('Profiler.stop');
      await writeFile(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}
