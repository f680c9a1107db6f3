import type { CloudConfig } from '../../src/config/cloud-config.ts';
import type { Principal } from '../../src/domain/auth/principal.ts';

/** An organization owner, for calling the pipeline use cases directly. */
export function ownerOf(organizationId: string): Principal {
  return {
    kind: 'api-key',
    keyId: `owner-${organizationId}`,
    organizationId,
    grants: [{ role: 'owner', resourceType: 'organization', resourceId: organizationId, organizationId }],
  };
}

/** Scheduler passes every `intervalMs` (0: none, the test drives them) and runs due at their tick. */
export function withPipelineScheduler(intervalMs: number): (config: CloudConfig) => CloudConfig {
  return (config) => ({
    ...config,
    pipelines: {
      ...config.pipelines,
      schedulerIntervalMs: intervalMs,
      scheduler: { ...config.pipelines.scheduler, runDelayMs: 0 },
    },
  });
}
