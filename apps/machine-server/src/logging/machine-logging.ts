/**
 * The logging system behind the machine-server's `MachineLogging` hook (machine-host.ts): built from the
 * command-line options, fed every applied config, uploading through the cloud connection with a spool
 * under `$VIAM_HOME/log-spool/<part id>`.
 *
 * `-log-file` sends lines to the (rotated) file instead of stdout; `VIAM_LOGFILE=<path>` sends them to
 * the file and stdout.
 */
import path from 'node:path';
import type { Clock } from '../clock.ts';
import type { CloudConnection } from '../cloud/cloud-connection.ts';
import { allResourceConfigs, type MachineConfig } from '../config/machine-config.ts';
import type { MachineLogging, MachineServerOptions } from '../machine-host.ts';
import { formatResourceName } from '../resources/resource-name.ts';
import { createCloudLogSender } from './cloud-log-sender.ts';
import {
  type CloudUploadOptions,
  createLogging,
  type LogConfig,
  type Logging,
  type LoggingOptions,
} from './logging-system.ts';

export interface MachineLoggingOptions {
  readonly server: Pick<MachineServerOptions, 'debug' | 'logFile' | 'viamHome' | 'env'>;
  readonly clock?: Clock;
  /** Tests: where stdout lines go. */
  readonly writeStdout?: (line: string) => void;
  /** Overrides of the logging system's defaults (rotation size, dedup window, upload intervals, …). */
  readonly logging?: Partial<LoggingOptions>;
  /** Overrides of the upload's defaults (spool bound, flush and retry intervals, send timeout). */
  readonly upload?: Partial<Omit<CloudUploadOptions, 'send' | 'spoolDirectory'>>;
}

export interface MachineLoggingSystem extends MachineLogging {
  /** The full logging system (named loggers, module log levels, module entries, upload stats). */
  readonly logging: Logging;
}

export function createMachineLogging(options: MachineLoggingOptions): MachineLoggingSystem {
  const { server } = options;
  const envLogFile = server.env.VIAM_LOGFILE || undefined;
  const logFile = server.logFile ?? envLogFile;
  const logging = createLogging({
    debugFlag: server.debug,
    ...(logFile ? { logFile, stdout: server.logFile === undefined } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.writeStdout ? { writeStdout: options.writeStdout } : {}),
    ...options.logging,
  });
  return {
    logging,
    logger: logging.loggerFor('rdk'),
    applyConfig(config) {
      logging.setConfig(logConfigFromMachineConfig(config));
    },
    attachCloud(connection: CloudConnection, partId: string) {
      logging.uploadToCloud({
        send: createCloudLogSender({ transport: connection.transport, partId }),
        spoolDirectory: path.join(server.viamHome, 'log-spool', partId),
        ...options.upload,
      });
    },
    close: (signal) => logging.close(signal),
  };
}

/** The logging fields of a parsed machine configuration. */
export function logConfigFromMachineConfig(config: MachineConfig): LogConfig {
  return {
    debug: config.debug,
    log: config.log,
    disableLogDeduplication: config.disableLogDeduplication,
    resourceLevels: allResourceConfigs(config).flatMap((resource) =>
      resource.logLevel
        ? [{ resourceName: formatResourceName(resource.resourceName), level: resource.logLevel }]
        : [],
    ),
  };
}
