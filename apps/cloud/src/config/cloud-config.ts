import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { defaultMaxConcurrentQueries } from '../domain/data/query-access/query-gate.ts';
import {
  defaultMachineConnectionSettings,
  type MachineConnectionSettings,
} from '../domain/machines/machine-runtime.ts';
import { defaultPipelineRunLimits, type PipelineRunLimits } from '../domain/pipelines/pipeline-runner.ts';
import {
  defaultPipelineSchedulerSettings,
  type PipelineSchedulerSettings,
} from '../domain/pipelines/pipeline-scheduler.ts';
import {
  defaultTriggerDeliverySettings,
  type TriggerDeliverySettings,
} from '../domain/triggers/delivery/trigger-delivery-settings.ts';
import { parseCidr, type WebhookAddressPolicy } from '../domain/triggers/delivery/webhook-address-policy.ts';
import type { BlobStoreConfig } from '../infra/blobs/index.ts';

/** Everything the cloud needs to start, parsed once: flags > environment > config file > defaults. */
export interface CloudConfig {
  dataDir: string;
  host: string;
  port: number;
  /** External PostgreSQL; when absent the cloud starts its own embedded one inside `dataDir`. */
  databaseUrl: string | undefined;
  tls: { certFile: string; keyFile: string } | undefined;
  /** Address clients use to reach this server (signed URLs, bootstrap.json). */
  publicUrl: string;
  blobs: BlobStoreConfig;
  maxMessageBytes: number;
  shutdownTimeoutMs: number;
  /** Silence after which a part counts as offline. */
  partOfflineAfterMs: number;
  /** Budget of one user SQL/MQL query: time, result rows, result bytes. */
  queryLimits: { timeoutMs: number; maxRows: number; maxBytes: number };
  /** Host and port BI tools use to reach PostgreSQL (GetDatabaseConnection); default: the database's own. */
  databasePublicHost: string | undefined;
  databasePublicPort: number | undefined;
  /** Address the embedded PostgreSQL listens on (loopback by default; `0.0.0.0` lets BI tools in). */
  databaseListenHost: string;
  /** Live streams, last-access writes, offline sweep and log retention timing. */
  machineConnection: MachineConnectionSettings;
  /** PEM files `RobotService.Certificate` serves to machines; without them machines run plaintext. */
  machineTls: { certFile: string; keyFile: string } | undefined;
  /** Data pipelines: per-run caps, the scheduler's settings and how often this replica runs a pass. */
  pipelines: PipelineConfig;
  /** Outgoing mail for email triggers (`smtp://` or `smtps://`, may carry credentials: never log it). */
  smtp: { url: string; from: string } | undefined;
  /** Webhook/email delivery of triggers: timeouts, retry backoff and window, retention. */
  triggerDelivery: TriggerDeliverySettings;
  /** How often a replica tries to reclaim expired hot-storage rows (one replica at a time does it). */
  hotStorageExpiryIntervalMs: number;
}

export interface PipelineConfig {
  runLimits: PipelineRunLimits;
  scheduler: PipelineSchedulerSettings;
  /** Runs executing at once per replica (the job workers, 8, are shared with trigger deliveries). */
  maxConcurrentRuns: number;
  /** Pause between two scheduler passes of this replica (every replica runs passes); 0: this replica runs none. */
  schedulerIntervalMs: number;
}

const flagOptions = {
  'data-dir': { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'database-url': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'public-url': { type: 'string' },
  'machine-tls-cert': { type: 'string' },
  'machine-tls-key': { type: 'string' },
  'config-file': { type: 'string' },
  's3-endpoint': { type: 'string' },
  's3-bucket': { type: 'string' },
  's3-region': { type: 'string' },
  'query-timeout-ms': { type: 'string' },
  'query-max-rows': { type: 'string' },
  'query-max-bytes': { type: 'string' },
  'database-public-host': { type: 'string' },
  'database-public-port': { type: 'string' },
  'database-listen-host': { type: 'string' },
  'pipeline-max-output-documents': { type: 'string' },
  'pipeline-max-output-bytes': { type: 'string' },
  'pipeline-run-timeout-ms': { type: 'string' },
  'pipeline-scheduler-interval-ms': { type: 'string' },
  'pipeline-run-delay-ms': { type: 'string' },
  'pipeline-stale-run-after-ms': { type: 'string' },
  'pipeline-windows-per-pass': { type: 'string' },
  'pipeline-late-data-lookback-ms': { type: 'string' },
  'pipeline-max-concurrent-runs': { type: 'string' },
  'pipeline-query-slots': { type: 'string' },
  'pipeline-max-attempts': { type: 'string' },
  'pipeline-retry-backoff-ms': { type: 'string' },
  'smtp-url': { type: 'string' },
  'smtp-from': { type: 'string' },
  // A bare flag (true); the environment or config file says true/false.
  'webhook-deny-private': { type: 'boolean' },
  'webhook-allow-cidr': { type: 'string' },
} as const;

type FileConfig = Partial<Record<keyof typeof flagOptions, string>> & {
  s3AccessKeyId?: string;
  s3SecretAccessKey?: string;
};

const envNames: Record<keyof typeof flagOptions, string> = {
  'data-dir': 'MCLOUD_DATA_DIR',
  host: 'MCLOUD_HOST',
  port: 'MCLOUD_PORT',
  'database-url': 'DATABASE_URL',
  'tls-cert': 'MCLOUD_TLS_CERT',
  'tls-key': 'MCLOUD_TLS_KEY',
  'public-url': 'MCLOUD_PUBLIC_URL',
  'machine-tls-cert': 'MCLOUD_MACHINE_TLS_CERT',
  'machine-tls-key': 'MCLOUD_MACHINE_TLS_KEY',
  'config-file': 'MCLOUD_CONFIG_FILE',
  's3-endpoint': 'MCLOUD_S3_ENDPOINT',
  's3-bucket': 'MCLOUD_S3_BUCKET',
  's3-region': 'MCLOUD_S3_REGION',
  'query-timeout-ms': 'MCLOUD_QUERY_TIMEOUT_MS',
  'query-max-rows': 'MCLOUD_QUERY_MAX_ROWS',
  'query-max-bytes': 'MCLOUD_QUERY_MAX_BYTES',
  'database-public-host': 'MCLOUD_DATABASE_PUBLIC_HOST',
  'database-public-port': 'MCLOUD_DATABASE_PUBLIC_PORT',
  'database-listen-host': 'MCLOUD_DATABASE_LISTEN_HOST',
  'pipeline-max-output-documents': 'MCLOUD_PIPELINE_MAX_OUTPUT_DOCUMENTS',
  'pipeline-max-output-bytes': 'MCLOUD_PIPELINE_MAX_OUTPUT_BYTES',
  'pipeline-run-timeout-ms': 'MCLOUD_PIPELINE_RUN_TIMEOUT_MS',
  'pipeline-scheduler-interval-ms': 'MCLOUD_PIPELINE_SCHEDULER_INTERVAL_MS',
  'pipeline-run-delay-ms': 'MCLOUD_PIPELINE_RUN_DELAY_MS',
  'pipeline-stale-run-after-ms': 'MCLOUD_PIPELINE_STALE_RUN_AFTER_MS',
  'pipeline-windows-per-pass': 'MCLOUD_PIPELINE_WINDOWS_PER_PASS',
  'pipeline-late-data-lookback-ms': 'MCLOUD_PIPELINE_LATE_DATA_LOOKBACK_MS',
  'pipeline-max-concurrent-runs': 'MCLOUD_PIPELINE_MAX_CONCURRENT_RUNS',
  'pipeline-query-slots': 'MCLOUD_PIPELINE_QUERY_SLOTS',
  'pipeline-max-attempts': 'MCLOUD_PIPELINE_MAX_ATTEMPTS',
  'pipeline-retry-backoff-ms': 'MCLOUD_PIPELINE_RETRY_BACKOFF_MS',
  'smtp-url': 'MCLOUD_SMTP_URL',
  'smtp-from': 'MCLOUD_SMTP_FROM',
  'webhook-deny-private': 'MCLOUD_WEBHOOK_DENY_PRIVATE',
  'webhook-allow-cidr': 'MCLOUD_WEBHOOK_ALLOW_CIDR',
};

export class ConfigError extends Error {}

export function loadCloudConfig(args: string[], env: NodeJS.ProcessEnv = process.env): CloudConfig {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof flagOptions; strict: true }>>;
  try {
    parsed = parseArgs({ args, options: flagOptions, strict: true, allowPositionals: false });
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  const flags = parsed.values as Partial<Record<keyof typeof flagOptions, string>>;
  const configFile = flags['config-file'] ?? env[envNames['config-file']];
  const file = configFile ? readConfigFile(configFile) : {};
  const pick = (name: keyof typeof flagOptions): string | undefined =>
    flags[name] ?? env[envNames[name]] ?? file[name];

  const host = pick('host') ?? '127.0.0.1';
  const port = parsePort(pick('port') ?? '8080');
  const certFile = pick('tls-cert');
  const keyFile = pick('tls-key');
  if (Boolean(certFile) !== Boolean(keyFile))
    throw new ConfigError('--tls-cert and --tls-key must be given together');
  const tls = certFile && keyFile ? { certFile, keyFile } : undefined;
  const machineCertFile = pick('machine-tls-cert');
  const machineKeyFile = pick('machine-tls-key');
  if (Boolean(machineCertFile) !== Boolean(machineKeyFile))
    throw new ConfigError('--machine-tls-cert and --machine-tls-key must be given together');
  const dataDir = path.resolve(pick('data-dir') ?? './mcloud-data');
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const publicUrl = (pick('public-url') ?? `${tls ? 'https' : 'http'}://${shownHost}:${port}`).replace(
    /\/$/,
    '',
  );
  return {
    dataDir,
    host,
    port,
    databaseUrl: pick('database-url'),
    tls,
    publicUrl,
    blobs: blobConfig(pick, env, file, dataDir),
    maxMessageBytes: 32 * 1024 * 1024,
    shutdownTimeoutMs: 10_000,
    partOfflineAfterMs: 30_000,
    queryLimits: {
      timeoutMs: positiveInteger('query-timeout-ms', pick('query-timeout-ms') ?? '30000'),
      maxRows: positiveInteger('query-max-rows', pick('query-max-rows') ?? '100000'),
      maxBytes: positiveInteger('query-max-bytes', pick('query-max-bytes') ?? String(16 * 1024 * 1024)),
    },
    databasePublicHost: pick('database-public-host'),
    databasePublicPort: optionalPort('database-public-port', pick('database-public-port')),
    databaseListenHost: pick('database-listen-host') ?? '127.0.0.1',
    machineConnection: { ...defaultMachineConnectionSettings },
    machineTls:
      machineCertFile && machineKeyFile ? { certFile: machineCertFile, keyFile: machineKeyFile } : undefined,
    pipelines: pipelineConfig(pick),
    smtp: smtpConfig(pick('smtp-url'), pick('smtp-from')),
    triggerDelivery: {
      ...defaultTriggerDeliverySettings,
      webhookAddressPolicy: webhookAddressPolicy(
        // The boolean flag arrives as `true`; environment and file give text.
        pick('webhook-deny-private') === undefined ? undefined : String(pick('webhook-deny-private')),
        pick('webhook-allow-cidr'),
      ),
    },
    hotStorageExpiryIntervalMs: 60_000,
  };
}

function pipelineConfig(pick: (name: keyof typeof flagOptions) => string | undefined): PipelineConfig {
  const value = (flag: keyof typeof flagOptions, fallback: number, allowZero = false) => {
    const text = pick(flag);
    if (text === undefined) return fallback;
    return allowZero ? nonNegativeInteger(flag, text) : positiveInteger(flag, text);
  };
  const limits = defaultPipelineRunLimits;
  const scheduler = defaultPipelineSchedulerSettings;
  const runLimits: PipelineRunLimits = {
    maxOutputDocuments: value('pipeline-max-output-documents', limits.maxOutputDocuments),
    maxOutputBytes: value('pipeline-max-output-bytes', limits.maxOutputBytes),
    runTimeoutMs: value('pipeline-run-timeout-ms', limits.runTimeoutMs),
    querySlots: value('pipeline-query-slots', limits.querySlots),
  };
  // Interactive queries must keep at least one slot whatever the pipelines do.
  if (runLimits.querySlots >= defaultMaxConcurrentQueries) {
    throw new ConfigError(
      `--pipeline-query-slots must be less than the ${defaultMaxConcurrentQueries} query slots of a replica (got ${runLimits.querySlots}), or pipeline runs could take every slot interactive queries need`,
    );
  }
  const settings: PipelineSchedulerSettings = {
    ...scheduler,
    runDelayMs: value('pipeline-run-delay-ms', scheduler.runDelayMs, true),
    staleRunAfterMs: value('pipeline-stale-run-after-ms', scheduler.staleRunAfterMs),
    maxWindowsPerPass: value('pipeline-windows-per-pass', scheduler.maxWindowsPerPass),
    lateDataLookbackMs: value('pipeline-late-data-lookback-ms', scheduler.lateDataLookbackMs, true),
    maxAttemptsPerWindow: value('pipeline-max-attempts', scheduler.maxAttemptsPerWindow),
    retryBackoffMs: value('pipeline-retry-backoff-ms', scheduler.retryBackoffMs, true),
  };
  // A run still querying is not stale: its query ends (or fails) within the run timeout.
  if (settings.staleRunAfterMs <= runLimits.runTimeoutMs) {
    throw new ConfigError(
      `--pipeline-stale-run-after-ms (${settings.staleRunAfterMs}) must be more than --pipeline-run-timeout-ms (${runLimits.runTimeoutMs}), or runs still within their time budget would be failed as stale`,
    );
  }
  return {
    runLimits,
    scheduler: settings,
    schedulerIntervalMs: value('pipeline-scheduler-interval-ms', 15_000, true),
    maxConcurrentRuns: value('pipeline-max-concurrent-runs', 4),
  };
}

/** `--webhook-deny-private[=true|false]`; `--webhook-allow-cidr a/n,b/m` (comma-separated CIDRs). */
function webhookAddressPolicy(
  denyPrivate: string | undefined,
  allowCidrs: string | undefined,
): WebhookAddressPolicy {
  const deny = (denyPrivate ?? 'false').trim().toLowerCase();
  if (!['', 'true', '1', 'yes', 'false', '0', 'no'].includes(deny)) {
    throw new ConfigError(
      `--webhook-deny-private must be true or false (got ${JSON.stringify(denyPrivate)})`,
    );
  }
  const cidrs = (allowCidrs ?? '')
    .split(',')
    .map((text) => text.trim())
    .filter((text) => text !== '');
  for (const cidr of cidrs) {
    try {
      parseCidr(cidr);
    } catch (error) {
      throw new ConfigError(`--webhook-allow-cidr: ${(error as Error).message}`);
    }
  }
  return { denyPrivate: ['', 'true', '1', 'yes'].includes(deny), allowCidrs: cidrs };
}

function smtpConfig(url: string | undefined, from: string | undefined): CloudConfig['smtp'] {
  if (!url) {
    if (from) throw new ConfigError('--smtp-from needs --smtp-url');
    return undefined;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(
      '--smtp-url must be a URL like smtp://user:password@host:587 (got an unparsable value)',
    );
  }
  if (parsed.protocol !== 'smtp:' && parsed.protocol !== 'smtps:') {
    throw new ConfigError(
      `--smtp-url must start with smtp:// or smtps:// (got ${JSON.stringify(parsed.protocol)})`,
    );
  }
  const sender = from ?? `Machine Cloud <mcloud@${parsed.hostname || 'localhost'}>`;
  if (!/@[^\s@>]+/.test(sender)) {
    throw new ConfigError(`--smtp-from must contain an email address (got ${JSON.stringify(sender)})`);
  }
  return { url, from: sender };
}

function blobConfig(
  pick: (name: keyof typeof flagOptions) => string | undefined,
  env: NodeJS.ProcessEnv,
  file: FileConfig,
  dataDir: string,
): BlobStoreConfig {
  const bucket = pick('s3-bucket');
  if (!bucket) return { kind: 'fs', rootDir: path.join(dataDir, 'blobs') };
  const accessKeyId = env.MCLOUD_S3_ACCESS_KEY_ID ?? env.AWS_ACCESS_KEY_ID ?? file.s3AccessKeyId;
  const secretAccessKey =
    env.MCLOUD_S3_SECRET_ACCESS_KEY ?? env.AWS_SECRET_ACCESS_KEY ?? file.s3SecretAccessKey;
  if (!accessKeyId || !secretAccessKey) {
    throw new ConfigError('S3 blobs need MCLOUD_S3_ACCESS_KEY_ID and MCLOUD_S3_SECRET_ACCESS_KEY');
  }
  const endpoint = pick('s3-endpoint');
  return {
    kind: 's3',
    bucket,
    region: pick('s3-region') ?? 'us-east-1',
    accessKeyId,
    secretAccessKey,
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
  };
}

function parsePort(text: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`--port must be an integer between 0 and 65535 (got ${JSON.stringify(text)})`);
  }
  return port;
}

function positiveInteger(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new ConfigError(`--${flag} must be a positive integer (got ${JSON.stringify(text)})`);
  }
  return value;
}

function nonNegativeInteger(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new ConfigError(`--${flag} must be a non-negative integer (got ${JSON.stringify(text)})`);
  }
  return value;
}

function optionalPort(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new ConfigError(`--${flag} must be an integer between 1 and 65535 (got ${JSON.stringify(text)})`);
  }
  return port;
}

function readConfigFile(file: string): FileConfig {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as FileConfig;
  } catch (error) {
    throw new ConfigError(`cannot read config file ${file}: ${(error as Error).message}`);
  }
}
