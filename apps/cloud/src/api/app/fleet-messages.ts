import type { DescMessage, MessageInitShape } from '@bufbuild/protobuf';
import { type Timestamp, timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { appPb } from '@mcloud/protocol';
import type { CloudDeps } from '../../cloud-deps.ts';
import type { ApiKeySummary, AuthorizationRecord } from '../../domain/fleet/api-keys-repository.ts';
import { type AuthorizationInput, authorizationIdOf } from '../../domain/fleet/authorizations.ts';
import type { FleetContext } from '../../domain/fleet/fleet-context.ts';
import { type Liveness, livenessOf } from '../../domain/fleet/liveness.ts';
import type { LocationRecord, SharedSecretRecord } from '../../domain/fleet/locations-repository.ts';
import { partFqdn, partLocalFqdn } from '../../domain/fleet/machine-addresses.ts';
import type { OrganizationRecord } from '../../domain/fleet/organizations-repository.ts';
import type { PartHistoryRecord, PartRecord } from '../../domain/fleet/parts-repository.ts';
import type { RobotRecord } from '../../domain/fleet/robots-repository.ts';

/** protobuf ⇄ domain conversions shared by the AppService handlers. */

export function fleetContextOf(deps: CloudDeps): FleetContext {
  return {
    db: deps.db,
    clock: deps.clock,
    // Read at call time: the config object is replaced once the port is known.
    get partOfflineAfterMs() {
      return deps.config.partOfflineAfterMs;
    },
    forgetCredentials: () => deps.authenticator.forget(),
  };
}

type Init<T extends DescMessage> = MessageInitShape<T>;

const ts = (date: Date | null | undefined): Timestamp | undefined =>
  date ? timestampFromDate(date) : undefined;

export function dateFromTimestamp(value: Timestamp | undefined): Date | undefined {
  return value ? timestampDate(value) : undefined;
}

const onlineStates = {
  online: appPb.OnlineState.ONLINE,
  offline: appPb.OnlineState.OFFLINE,
  'awaiting-setup': appPb.OnlineState.AWAITING_SETUP,
} as const;

function livenessFields(liveness: Liveness) {
  return {
    onlineState: onlineStates[liveness.status],
    secondsSinceOnline: BigInt(liveness.secondsSinceOnline),
  };
}

export function organizationToProto(org: OrganizationRecord): Init<typeof appPb.OrganizationSchema> {
  return {
    id: org.id,
    name: org.name,
    createdOn: ts(org.createdAt),
    publicNamespace: org.publicNamespace ?? '',
    defaultRegion: org.defaultRegion,
    ...(org.cid !== null && { cid: org.cid }),
  };
}

export function sharedSecretToProto(secret: SharedSecretRecord): Init<typeof appPb.SharedSecretSchema> {
  return {
    id: secret.id,
    secret: secret.secret,
    createdOn: ts(secret.createdAt),
    state: secret.enabled ? appPb.SharedSecret_State.ENABLED : appPb.SharedSecret_State.DISABLED,
  };
}

export function locationAuthToProto(location: LocationRecord): Init<typeof appPb.LocationAuthSchema> {
  return {
    locationId: location.id,
    secret: location.secrets[0]?.secret ?? '',
    secrets: location.secrets.map(sharedSecretToProto),
  };
}

export function locationToProto(location: LocationRecord): Init<typeof appPb.LocationSchema> {
  return {
    id: location.id,
    name: location.name,
    parentLocationId: location.parentLocationId ?? '',
    auth: locationAuthToProto(location),
    organizations: [{ organizationId: location.organizationId, primary: true }],
    createdOn: ts(location.createdAt),
    robotCount: location.robotCount,
    config: { region: location.region },
  };
}

export function robotToProto(ctx: FleetContext, robot: RobotRecord): Init<typeof appPb.RobotSchema> {
  return {
    id: robot.id,
    name: robot.name,
    location: robot.locationId,
    lastAccess: ts(robot.lastAccess),
    createdOn: ts(robot.createdAt),
    ...livenessFields(
      livenessOf(robot.lastAccess, ctx.clock.nowMs(), ctx.partOfflineAfterMs, robot.connectedLastAccess),
    ),
  };
}

export function partToProto(ctx: FleetContext, part: PartRecord): Init<typeof appPb.RobotPartSchema> {
  return {
    id: part.id,
    name: part.name,
    dnsName: part.dnsName,
    secret: part.secrets[0]?.secret ?? '',
    robot: part.robotId,
    locationId: part.locationId,
    robotConfig: part.config as Init<typeof appPb.RobotPartSchema>['robotConfig'],
    lastAccess: ts(part.lastAccess),
    ...(part.userSuppliedInfo && {
      userSuppliedInfo: part.userSuppliedInfo as Init<typeof appPb.RobotPartSchema>['userSuppliedInfo'],
    }),
    mainPart: part.mainPart,
    fqdn: partFqdn(part.dnsName, part.locationId),
    localFqdn: partLocalFqdn(part.dnsName, part.locationId),
    createdOn: ts(part.createdAt),
    secrets: part.secrets.map(sharedSecretToProto),
    lastUpdated: ts(part.lastUpdated),
    ...livenessFields(
      livenessOf(
        part.lastAccess,
        ctx.clock.nowMs(),
        ctx.partOfflineAfterMs,
        part.disconnectedAt ? null : part.lastAccess,
      ),
    ),
  };
}

export function historyEntryToProto(
  ctx: FleetContext,
  entry: PartHistoryRecord,
): Init<typeof appPb.RobotPartHistoryEntrySchema> {
  return {
    part: entry.partId,
    robot: entry.robotId,
    when: ts(entry.editedAt),
    old: partToProto(ctx, entry.old),
    editedBy: {
      type:
        entry.editedBy.type === 'api-key'
          ? appPb.AuthenticationType.API_KEY
          : appPb.AuthenticationType.ROBOT_PART_SECRET,
      value: entry.editedBy.value,
    },
  };
}

export function authorizationFromProto(a: appPb.Authorization): AuthorizationInput {
  return {
    authorizationType: a.authorizationType,
    authorizationId: a.authorizationId,
    resourceType: a.resourceType,
    resourceId: a.resourceId,
    organizationId: a.organizationId,
    identityId: a.identityId,
    identityType: a.identityType,
  };
}

export function authorizationToProto(a: AuthorizationRecord): Init<typeof appPb.AuthorizationSchema> {
  return {
    authorizationType: 'role',
    authorizationId: authorizationIdOf(a),
    resourceType: a.resourceType,
    resourceId: a.resourceId,
    identityId: a.identityId,
    organizationId: a.organizationId,
    identityType: a.identityType,
  };
}

/** Keys as listed: never with their secret (`key` stays empty). */
export function apiKeyWithAuthorizationsToProto(
  key: ApiKeySummary,
): Init<typeof appPb.APIKeyWithAuthorizationsSchema> {
  return {
    apiKey: { id: key.id, key: '', name: key.name, createdOn: ts(key.createdAt) },
    authorizations: key.authorizations.map((a) => ({
      authorizationType: 'role',
      authorizationId: authorizationIdOf(a),
      resourceType: a.resourceType,
      resourceId: a.resourceId,
      orgId: a.organizationId,
    })),
  };
}
