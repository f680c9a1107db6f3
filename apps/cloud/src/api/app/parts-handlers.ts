import type { ServiceImpl } from '@connectrpc/connect';
import type { appPb } from '@mcloud/protocol';
import type { FleetContext } from '../../domain/fleet/fleet-context.ts';
import { configJsonOf } from '../../domain/fleet/part-config.ts';
import * as parts from '../../domain/fleet/parts.ts';
import { principalOf } from '../context.ts';
import { dateFromTimestamp, historyEntryToProto, partToProto } from './fleet-messages.ts';

type Handlers = Partial<ServiceImpl<typeof appPb.AppService>>;

export function partHandlers(ctx: FleetContext): Handlers {
  return {
    async newRobotPart(req, context) {
      return {
        partId: await parts.newRobotPart(ctx, principalOf(context), {
          robotId: req.robotId,
          partName: req.partName,
        }),
      };
    },
    async getRobotParts(req, context) {
      const list = await parts.getRobotParts(ctx, principalOf(context), req.robotId);
      return { parts: list.map((part) => partToProto(ctx, part)) };
    },
    async getRobotPart(req, context) {
      const part = await parts.getRobotPart(ctx, principalOf(context), req.id);
      return { part: partToProto(ctx, part), configJson: configJsonOf(part.config) };
    },
    async getRobotPartByNameAndLocation(req, context) {
      const part = await parts.getRobotPartByNameAndLocation(ctx, principalOf(context), {
        name: req.name,
        locationId: req.locationId,
      });
      return { part: partToProto(ctx, part) };
    },
    async updateRobotPart(req, context) {
      const part = await parts.updateRobotPart(ctx, principalOf(context), {
        id: req.id,
        name: req.name,
        robotConfig: req.robotConfig,
        lastKnownUpdate: dateFromTimestamp(req.lastKnownUpdate),
      });
      return { part: partToProto(ctx, part) };
    },
    async getRobotPartHistory(req, context) {
      const history = await parts.getRobotPartHistory(ctx, principalOf(context), req.id);
      return { history: history.map((entry) => historyEntryToProto(ctx, entry)) };
    },
    async deleteRobotPart(req, context) {
      await parts.deleteRobotPart(ctx, principalOf(context), req.partId);
      return {};
    },
    async markPartAsMain(req, context) {
      await parts.markPartAsMain(ctx, principalOf(context), req.partId);
      return {};
    },
    async markPartForRestart(req, context) {
      await parts.markPartForRestart(ctx, principalOf(context), req.partId);
      return {};
    },
    async createRobotPartSecret(req, context) {
      return {
        part: partToProto(ctx, await parts.createRobotPartSecret(ctx, principalOf(context), req.partId)),
      };
    },
    async deleteRobotPartSecret(req, context) {
      await parts.deleteRobotPartSecret(ctx, principalOf(context), {
        partId: req.partId,
        secretId: req.secretId,
      });
      return {};
    },
    async getRobotPartMetadata(req, context) {
      return { data: (await parts.getRobotPartMetadata(ctx, principalOf(context), req.id)) as never };
    },
    async updateRobotPartMetadata(req, context) {
      await parts.updateRobotPartMetadata(ctx, principalOf(context), req.id, req.data);
      return {};
    },
  };
}
