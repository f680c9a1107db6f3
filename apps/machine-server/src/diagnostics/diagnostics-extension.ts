/**
 * Diagnostics of a running machine-server (machine-runtime.md A6):
 * - FTDC (`-ftdc`, default on): a metrics sample every second to
 *   `$VIAM_HOME/diagnostics.data/<partID or local-config>/machine-server-<UTC time>.ftdc`; when cloud
 *   managed, completed files are uploaded (FileUpload, type FILE) and deleted once acknowledged;
 * - `-output-telemetry`: the same metrics as one JSON line on stdout every 10 s;
 * - the network checks, once in the background at start-up (`-network-check` runs them alone).
 * Intervals and limits come from `options.diagnostics` (diagnostics-tuning.ts).
 */
import path from 'node:path';
import { uploadTargetOf } from '../data/data-manager-model.ts';
import { errorMessage } from '../errors.ts';
import type { MachineExtension, MachineHost } from '../machine-host.ts';
import { defaultDiagnosticsTuning } from './diagnostics-tuning.ts';
import { type FtdcUploader, startFtdcUploader } from './ftdc-uploader.ts';
import { createFtdcWriter, type FtdcWriter } from './ftdc-writer.ts';
import { runNetworkChecks } from './network-check.ts';
import { createMetricsSampler, type MetricsSampler } from './process-metrics.ts';

export function diagnosticsDirectory(viamHome: string, partId: string | undefined): string {
  return path.join(viamHome, 'diagnostics.data', partId ?? 'local-config');
}

export function createDiagnosticsExtension(
  allExtensions: () => readonly MachineExtension[],
): MachineExtension {
  const timers: NodeJS.Timeout[] = [];
  const stopping = new AbortController();
  let closeSampler: (() => void) | undefined;
  let uploader: FtdcUploader | undefined;
  let pendingWrite: Promise<void> = Promise.resolve();
  let backgroundChecks: Promise<unknown> = Promise.resolve();

  const startFtdc = (host: MachineHost, sampler: MetricsSampler) => {
    const tuning = host.options.diagnostics ?? defaultDiagnosticsTuning;
    const directory = diagnosticsDirectory(host.options.viamHome, host.cloud?.partId);
    const writer: FtdcWriter = createFtdcWriter({
      directory,
      maxFileBytes: tuning.ftdcMaxFileBytes,
      maxFiles: tuning.ftdcMaxFiles,
    });
    const logger = host.logger.child('ftdc');
    let busy = false;
    let warned = false;
    timers.push(
      setInterval(() => {
        if (busy) return;
        busy = true;
        pendingWrite = writer
          .write(host.clock.now(), sampler())
          .catch((error: unknown) => {
            if (!warned) logger.warn('FTDC write failed', { directory, error: errorMessage(error) });
            warned = true;
          })
          .finally(() => {
            busy = false;
          });
      }, tuning.ftdcIntervalMs),
    );
    if (host.cloud) {
      uploader = startFtdcUploader({
        directory,
        target: uploadTargetOf(host),
        currentFile: () => writer.currentFile(),
        intervalMs: tuning.ftdcUploadIntervalMs,
        clock: host.clock,
        logger,
      });
    }
  };

  return {
    name: 'diagnostics',
    diagnostics(): Record<string, number> {
      const stats = uploader?.stats();
      return stats ? { ftdc_uploaded_files: stats.uploadedFiles, ftdc_upload_retries: stats.retries } : {};
    },
    async start(host: MachineHost) {
      const { ftdc, outputTelemetry } = host.options;
      const tuning = host.options.diagnostics ?? defaultDiagnosticsTuning;
      // Never awaited: start-up does not wait for the network.
      const checks = setTimeout(() => {
        backgroundChecks = runNetworkChecks({
          ...(host.cloud ? { appAddress: host.cloud.appAddress } : {}),
          logger: host.logger.child('network-checks'),
          signal: stopping.signal,
          report: 'summary',
        }).catch(() => {});
      }, 0);
      checks.unref();
      timers.push(checks);
      if (!ftdc && !outputTelemetry) return;
      const sampler = createMetricsSampler(host, allExtensions());
      closeSampler = sampler.close;
      if (ftdc) startFtdc(host, sampler);
      if (outputTelemetry) {
        timers.push(
          setInterval(
            () => process.stdout.write(`${JSON.stringify({ telemetry: sampler(), at: host.clock.now() })}\n`),
            tuning.telemetryIntervalMs,
          ),
        );
      }
      for (const timer of timers) timer.unref();
    },
    async stop() {
      stopping.abort();
      for (const timer of timers) clearInterval(timer);
      await Promise.all([pendingWrite, uploader?.close(), backgroundChecks]);
      closeSampler?.();
    },
  };
}
