import type { ServiceImpl } from '@connectrpc/connect';
import type { appPb } from '@mcloud/protocol';
import type { FleetContext } from '../../domain/fleet/fleet-context.ts';
import * as locations from '../../domain/fleet/locations.ts';
import { principalOf } from '../context.ts';
import { locationAuthToProto, locationToProto } from './fleet-messages.ts';

type Handlers = Partial<ServiceImpl<typeof appPb.AppService>>;

export function locationHandlers(ctx: FleetContext): Handlers {
  return {
    async createLocation(req, context) {
      const location = await locations.createLocation(ctx, principalOf(context), {
        organizationId: req.organizationId,
        name: req.name,
        parentLocationId: req.parentLocationId,
      });
      return { location: locationToProto(location) };
    },
    async getLocation(req, context) {
      return {
        location: locationToProto(await locations.getLocation(ctx, principalOf(context), req.locationId)),
      };
    },
    async updateLocation(req, context) {
      const location = await locations.updateLocation(ctx, principalOf(context), {
        locationId: req.locationId,
        name: req.name,
        parentLocationId: req.parentLocationId,
        region: req.region,
      });
      return { location: locationToProto(location) };
    },
    async deleteLocation(req, context) {
      await locations.deleteLocation(ctx, principalOf(context), req.locationId);
      return {};
    },
    async listLocations(req, context) {
      return {
        locations: (await locations.listLocations(ctx, principalOf(context), req.organizationId)).map(
          locationToProto,
        ),
      };
    },
    async locationAuth(req, context) {
      return {
        auth: locationAuthToProto(await locations.locationAuth(ctx, principalOf(context), req.locationId)),
      };
    },
    async createLocationSecret(req, context) {
      return {
        auth: locationAuthToProto(
          await locations.createLocationSecret(ctx, principalOf(context), req.locationId),
        ),
      };
    },
    async deleteLocationSecret(req, context) {
      await locations.deleteLocationSecret(ctx, principalOf(context), {
        locationId: req.locationId,
        secretId: req.secretId,
      });
      return {};
    },
    async getLocationMetadata(req, context) {
      return {
        data: (await locations.getLocationMetadata(ctx, principalOf(context), req.locationId)) as never,
      };
    },
    async updateLocationMetadata(req, context) {
      await locations.updateLocationMetadata(ctx, principalOf(context), req.locationId, req.data);
      return {};
    },
  };
}
