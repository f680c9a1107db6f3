/** `-cpuprofile FILE`: the V8 CPU profile of the whole run (Chrome DevTools `.cpuprofile` JSON). */
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';

export interface CpuProfile {
  /** Stops profiling and writes the file. */
  finish(): Promise<void>;
}

export async function startCpuProfile(file: string): Promise<CpuProfile> {
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
