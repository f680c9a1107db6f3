import { readFile } from 'node:fs/promises';
import { create } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import { robotPb } from '@mcloud/protocol';
import type { CloudDeps } from '../../cloud-deps.ts';
import { failedPrecondition } from '../../domain/errors.ts';
import { validateLogBatch } from '../../domain/logs/log-entry.ts';
import { appendPartLogs } from '../../domain/logs/part-logs.ts';
import { placementOf, requireMachinePart } from '../../domain/machines/machine-access.ts';
import {
  loadMachineConfigSource,
  recordAgentInfo,
  takeRestartRequest,
} from '../../domain/machines/machine-config.ts';
import { fleetContextOf } from '../app/fleet-messages.ts';
import { principalOf } from '../context.ts';
import { logEntryFromProto } from './log-entry-messages.ts';
import { robotConfigFromJson } from './robot-config-from-json.ts';

type Handlers = Partial<ServiceImpl<typeof robotPb.RobotService>>;

/** How often machines should ask NeedsRestart (RDK replaces anything under 1 s with 5 s). */
const restartCheckIntervalMs = 5_000;

/**
 * `viam.app.v1.RobotService`: the cloud side of a machine (wire-protocol §4.1). Machine credentials only:
 * the part's own secret, or an API key with owner (Config, Certificate: they carry secrets) or operator
 * (Log, NeedsRestart) on the part's machine. Every call counts as machine contact (live status).
 */
export function robotServiceHandlers(deps: CloudDeps): Handlers {
  const ctx = fleetContextOf(deps);

  async function machinePart(
    principal: ReturnType<typeof principalOf>,
    id: string,
    role: 'owner' | 'operator',
  ) {
    const part = await requireMachinePart(ctx, principal, id, role);
    await deps.machines.presence.touch(placementOf(part));
    return part;
  }

  return {
    async config(req, context) {
      const part = await machinePart(principalOf(context), req.id, 'owner');
      if (req.agentInfo) {
        await recordAgentInfo(ctx, part, {
          host: req.agentInfo.host,
          os: req.agentInfo.os,
          ips: req.agentInfo.ips,
          version: req.agentInfo.version,
          gitRevision: req.agentInfo.gitRevision,
          platform: req.agentInfo.platform,
          platformTags: req.agentInfo.platformTags,
        });
      }
      const source = await loadMachineConfigSource(ctx, part, {
        machineTls: deps.config.machineTls !== undefined,
      });
      return { config: create(robotPb.RobotConfigSchema, robotConfigFromJson(source)) };
    },

    async certificate(req, context) {
      const part = await machinePart(principalOf(context), req.id, 'owner');
      const tls = deps.config.machineTls;
      if (!tls) {
        throw failedPrecondition(
          'no TLS certificate: this cloud has no machine certificates configured (--machine-tls-cert/--machine-tls-key); ' +
            'machines get signaling_insecure = true and serve plaintext',
        );
      }
      const [certificate, key] = await Promise.all([
        readFile(tls.certFile, 'utf8'),
        readFile(tls.keyFile, 'utf8'),
      ]);
      return { id: part.id, tlsCertificate: certificate, tlsPrivateKey: key };
    },

    async log(req, context) {
      const part = await machinePart(principalOf(context), req.id, 'operator');
      const entries = validateLogBatch('logs', req.logs.map(logEntryFromProto));
      await appendPartLogs(deps.machines.logs, placementOf(part), entries);
      return {};
    },

    async needsRestart(req, context) {
      const part = await machinePart(principalOf(context), req.id, 'operator');
      return {
        id: part.id,
        mustRestart: await takeRestartRequest(ctx, part),
        restartCheckInterval: durationFromMs(restartCheckIntervalMs),
      };
    },
  };
}
