import type { Principal, Role } from '../auth/principal.ts';
import { notFound } from '../errors.ts';
import type { FleetContext } from '../fleet/fleet-context.ts';
import { requirePart } from '../fleet/parts.ts';
import type { PartRecord } from '../fleet/parts-repository.ts';
import { requireUuid } from '../validate.ts';

/**
 * Who may act as a machine part (RobotService, the live stream): the part's own secret (only for that
 * part), or an API key holding `role` on the part's machine (directly or through its location or
 * organization). `Config` needs owner because it carries secrets; logs and restart checks need operator.
 * Another organization's part answers NotFound exactly like an unknown one.
 */
export async function requireMachinePart(
  ctx: FleetContext,
  principal: Principal,
  partId: string,
  role: Role,
  field = 'id',
): Promise<PartRecord> {
  const id = requireUuid(field, partId);
  if (principal.kind === 'part') {
    // A part's own secret is full machine access to that part (and nothing else).
    if (principal.partId !== id) throw notFound('machine part', id);
    return requirePart(ctx, principal, id, 'operator', field);
  }
  return requirePart(ctx, principal, id, role, field);
}

export function placementOf(part: PartRecord) {
  return {
    organizationId: part.organizationId,
    locationId: part.locationId,
    robotId: part.robotId,
    partId: part.id,
  };
}
