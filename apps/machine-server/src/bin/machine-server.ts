#!/usr/bin/env node
/**
 * `machine-server -config FILE [options]` (machine-runtime.md A0, A6, A9). Exit codes: 0 after a clean
 * shutdown (or -version, -dump-resources, -network-check, -h), 1 when start-up fails or the shutdown
 * deadline (60 s) passes, 2 for a bad command line. First SIGINT/SIGTERM: graceful stop; second: exit now.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { scheduleStartUpMemoryRelease } from '@mcloud/module-sdk';
import { registerBuiltinModels } from '../builtins/register-builtins.ts';
import { parseMachineServerFlags } from '../cli/machine-server-flags.ts';
import { systemClock } from '../clock.ts';
import { type CpuProfile, startCpuProfile } from '../diagnostics/cpu-profile.ts';
import { writeDumpResources } from '../diagnostics/dump-resources.ts';
import { runNetworkChecks } from '../diagnostics/network-check.ts';
import { errorMessage } from '../errors.ts';
import { createDefaultParts } from '../machine-extensions.ts';
import { startMachineServer } from '../machine-server.ts';
import { createModelRegistry } from '../resources/model-registry.ts';
import { apiVersion, gitRevision, machineServerVersion } from '../version.ts';

const shutdownDeadlineMs = 60_000;
/**
 * Start-up memory is released this long after the machine is ready (module-sdk start-up-memory.ts):
 * clear of the first NeedsRestart poll (5 s after start) and the first config check (15 s).
 */
const startUpMemoryReleaseDelayMs = 10_000;

async function main(): Promise<number> {
  const parsed = parseMachineServerFlags(process.argv.slice(2), process.env);
  if (parsed.kind === 'help') {
    process.stdout.write(parsed.text);
    return 0;
  }
  if (parsed.kind === 'error') {
    process.stderr.write(`${parsed.message}\n${parsed.text}`);
    return 2;
  }
  const { flags } = parsed;
  const parts = createDefaultParts(flags.options);

  if (flags.dumpResources) {
    const registry = createModelRegistry();
    registerBuiltinModels(registry, systemClock);
    for (const extension of parts.extensions) extension.registerModels?.(registry);
    try {
      await writeDumpResources(registry, flags.dumpResources);
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code ?? errorMessage(error);
      process.stderr.write(
        `-dump-resources: cannot write ${JSON.stringify(flags.dumpResources)} (${reason})\n`,
      );
      return 1;
    }
    return 0;
  }
  const logger = parts.logging.logger;
  if (flags.version) {
    logger.info('machine-server', {
      version: machineServerVersion,
      git_rev: gitRevision(flags.options.env) || 'machine-server built from source; version unknown',
      api_version: apiVersion,
      env: Object.keys(flags.options.env).filter((key) => key.startsWith('VIAM_')),
    });
    return 0;
  }
  if (flags.networkCheck) {
    let appAddress: string | undefined;
    if (flags.config) {
      try {
        const json = JSON.parse(await readFile(flags.config, 'utf8')) as {
          cloud?: { app_address?: unknown };
        };
        if (typeof json.cloud?.app_address === 'string') appAddress = json.cloud.app_address;
      } catch (error) {
        logger.warn('not checking the cloud address: the -config file cannot be read', {
          config: flags.config,
          error: errorMessage(error),
        });
      }
    }
    // Failed checks are results (logged at WARN), not a failure of the command.
    await runNetworkChecks({ ...(appAddress ? { appAddress } : {}), logger: logger.child('network-checks') });
    await parts.logging.close(AbortSignal.timeout(5000)).catch(() => {});
    return 0;
  }
  if (!flags.config) {
    logger.error('please specify a config file through the -config parameter.');
    return 0;
  }
  await mkdir(flags.options.viamHome, { recursive: true, mode: 0o700 });
  process.env.VIAM_HOME = flags.options.viamHome;
  let profile: CpuProfile | undefined;
  if (flags.options.cpuProfile) {
    try {
      profile = await startCpuProfile(flags.options.cpuProfile);
    } catch (error) {
      logger.error('machine-server failed to start', { error: errorMessage(error) });
      await parts.logging.close(AbortSignal.timeout(5000)).catch(() => {});
      return 1;
    }
  }

  let server: Awaited<ReturnType<typeof startMachineServer>> | undefined;
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      logger.error('second signal; exiting without waiting for a clean shutdown', { signal });
      process.exit(1);
    }
    logger.info('signal received; shutting down (send it again to force)', { signal });
    void server?.stop(`signal ${signal}`);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGPIPE', () => {});
  try {
    server = await startMachineServer(
      { ...flags.options, configPath: flags.config },
      {
        logging: parts.logging,
        extensions: parts.extensions,
        ...(parts.moduleReconciler ? { moduleReconciler: parts.moduleReconciler } : {}),
      },
    );
  } catch (error) {
    logger.error('machine-server failed to start', { error: errorMessage(error) });
    await parts.logging.close(AbortSignal.timeout(5000)).catch(() => {});
    await profile?.finish();
    return 1;
  }
  if (signals > 0) void server.stop('signal during start-up');
  const cancelMemoryRelease = scheduleStartUpMemoryRelease(startUpMemoryReleaseDelayMs, logger);

  await server.stopping;
  cancelMemoryRelease();
  const waiting = setInterval(() => logger.warn('Waiting for clean shutdown'), 10_000);
  const forced = setTimeout(() => {
    logger.error('server failed to cleanly shutdown after deadline');
    process.exit(1);
  }, shutdownDeadlineMs);
  await server.stopped;
  clearInterval(waiting);
  clearTimeout(forced);
  await profile?.finish();
  return 0;
}

process.exit(await main());
