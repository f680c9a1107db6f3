import type { ServiceImpl } from '@connectrpc/connect';
import type { appPb } from '@mcloud/protocol';
import type { FleetContext } from '../../domain/fleet/fleet-context.ts';
import * as robots from '../../domain/fleet/robots.ts';
import { principalOf } from '../context.ts';
import { robotToProto } from './fleet-messages.ts';

type Handlers = Partial<ServiceImpl<typeof appPb.AppService>>;

export function robotHandlers(ctx: FleetContext): Handlers {
  return {
    async newRobot(req, context) {
      return {
        id: await robots.newRobot(ctx, principalOf(context), { name: req.name, location: req.location }),
      };
    },
    async getRobot(req, context) {
      return { robot: robotToProto(ctx, await robots.getRobot(ctx, principalOf(context), req.id)) };
    },
    async updateRobot(req, context) {
      const robot = await robots.updateRobot(ctx, principalOf(context), {
        id: req.id,
        name: req.name,
        location: req.location,
      });
      return { robot: robotToProto(ctx, robot) };
    },
    async deleteRobot(req, context) {
      await robots.deleteRobot(ctx, principalOf(context), req.id);
      return {};
    },
    async listRobots(req, context) {
      const list = await robots.listRobots(ctx, principalOf(context), req.locationId);
      return { robots: list.map((robot) => robotToProto(ctx, robot)) };
    },
    async listRobotsForLocations(req, context) {
      const list = await robots.listRobotsForLocations(ctx, principalOf(context), req.locationIds);
      return { robots: list.map((robot) => robotToProto(ctx, robot)) };
    },
    async listRobotsForOrg(req, context) {
      const list = await robots.listRobotsForOrg(ctx, principalOf(context), req.orgId);
      return { robots: list.map((robot) => robotToProto(ctx, robot)) };
    },
    async getRobotMetadata(req, context) {
      return { data: (await robots.getRobotMetadata(ctx, principalOf(context), req.id)) as never };
    },
    async updateRobotMetadata(req, context) {
      await robots.updateRobotMetadata(ctx, principalOf(context), req.id, req.data);
      return {};
    },
  };
}
