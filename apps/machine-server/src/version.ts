/** Version facts reported by -version, GetVersion and the cloud's AgentInfo. */
import { readFileSync } from 'node:fs';

const packageJson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

export const machineServerVersion: string = packageJson.version;
/** The Viam API version of the pinned SDK protos (`@viamrobotics/sdk` 0.61.1). */
export const apiVersion = 'v0.1.512';

export function gitRevision(env: Readonly<Record<string, string | undefined>>): string {
  return env.MACHINE_SERVER_GIT_REVISION ?? '';
}
