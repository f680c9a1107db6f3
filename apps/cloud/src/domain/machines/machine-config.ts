import { machineApiKeySecrets } from '../auth/sealed-api-key-secrets.ts';
import type { FleetContext } from '../fleet/fleet-context.ts';
import { partFqdn, partLocalFqdn } from '../fleet/machine-addresses.ts';
import type { PartRecord } from '../fleet/parts-repository.ts';

/** Everything `RobotService.Config` turns into a `RobotConfig` (wire-protocol §4.2–4.3). */
export interface MachineConfigSource {
  partId: string;
  robotId: string;
  locationId: string;
  organizationId: string;
  fqdn: string;
  localFqdn: string;
  /** Where the machine would answer WebRTC calls; empty: this cloud does not relay them. */
  signalingAddress: string;
  /** True unless machine TLS certificates are configured (then `Certificate` serves them). */
  signalingInsecure: boolean;
  config: Record<string, unknown>;
  revision: number;
  /** Enabled location secrets, oldest first (the machine's `robot-location-secret` credentials). */
  locationSecrets: { id: string; secret: string }[];
  /** API keys authorized for this machine at organization, location or machine level. */
  apiKeys: { id: string; key: string }[];
}

/** The machine-reported AgentInfo (host, os, ips, version, platform …), kept as `user_supplied_info`. */
export interface AgentInfo {
  host: string;
  os: string;
  ips: string[];
  version: string;
  gitRevision: string;
  platform: string | undefined;
  platformTags: string[];
}

export async function loadMachineConfigSource(
  ctx: FleetContext,
  part: PartRecord,
  options: { machineTls: boolean },
): Promise<MachineConfigSource> {
  const secrets = await ctx.db.query<{ id: string; secret: string }>(
    `SELECT id, secret FROM location_secrets WHERE location_id = $1 AND organization_id = $2 AND state = 1
      ORDER BY created_at, id`,
    [part.locationId, part.organizationId],
  );
  return {
    partId: part.id,
    robotId: part.robotId,
    locationId: part.locationId,
    organizationId: part.organizationId,
    fqdn: partFqdn(part.dnsName, part.locationId),
    localFqdn: partLocalFqdn(part.dnsName, part.locationId),
    signalingAddress: '',
    signalingInsecure: !options.machineTls,
    config: part.config,
    revision: part.revision,
    locationSecrets: secrets.rows,
    apiKeys: await machineApiKeySecrets(ctx.db, part),
  };
}

function agentInfoDocument(info: AgentInfo): Record<string, unknown> {
  return {
    host: info.host,
    os: info.os,
    ips: info.ips,
    version: info.version,
    git_revision: info.gitRevision,
    ...(info.platform !== undefined && { platform: info.platform }),
    platform_tags: info.platformTags,
  };
}

/** Stores the reported AgentInfo when it differs from what is stored (`RobotPart.user_supplied_info`). */
export async function recordAgentInfo(ctx: FleetContext, part: PartRecord, info: AgentInfo): Promise<void> {
  const document = agentInfoDocument(info);
  if (canonicalJson(part.userSuppliedInfo) === canonicalJson(document)) return;
  await ctx.db.query(
    'UPDATE robot_parts SET user_supplied_info = $3 WHERE id = $1 AND organization_id = $2',
    [part.id, part.organizationId, JSON.stringify(document)],
  );
}

/** Reads and clears the restart request of `AppService.MarkPartForRestart` in one statement. */
export async function takeRestartRequest(ctx: FleetContext, part: PartRecord): Promise<boolean> {
  const result = await ctx.db.query<{ was: boolean }>(
    `UPDATE robot_parts p SET needs_restart = false
       FROM (SELECT id, needs_restart FROM robot_parts WHERE id = $1 AND organization_id = $2 FOR UPDATE) old
      WHERE p.id = old.id RETURNING old.needs_restart AS was`,
    [part.id, part.organizationId],
  );
  return result.rows[0]?.was === true;
}

/** JSON with object keys sorted (jsonb does not keep key order), for comparisons. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}
