export type Role = 'owner' | 'operator';
export type ResourceType = 'organization' | 'location' | 'robot';

export interface Grant {
  role: Role;
  resourceType: ResourceType;
  resourceId: string;
  organizationId: string;
}

/** Who is calling: an API key with its grants, or a machine part holding its own secret. */
export type Principal =
  | { kind: 'api-key'; keyId: string; organizationId: string; grants: readonly Grant[] }
  | { kind: 'part'; partId: string; robotId: string; locationId: string; organizationId: string };

/** Where a resource sits in the fleet hierarchy; permission checks walk it upwards. */
export interface ResourceScope {
  organizationId: string;
  locationId?: string;
  robotId?: string;
  partId?: string;
}
