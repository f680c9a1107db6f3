/**
 * FTDC (`-ftdc`, default on: a sample every second to
 * `$VIAM_HOME/diagnostics.data/<partID or local-config>/machine-server-<UTC time>.ftdc`) and
 * `-output-telemetry` (the same metrics printed to stdout every 10 s). Completed FTDC files stay in
 * that directory for upload by the data manager (ms-data: `diagnosticsDirectory`).
 */
import path from 'node:path';
import { errorMessage } from '../errors.ts';
import type { MachineExtension, MachineHost } from '../machine-host.ts';
import { createFtdcWriter } from './ftdc-writer.ts';
import { createMetricsSampler } from './process-metrics.ts';

export function diagnosticsDirectory(viamHome: string, partId: string | undefined): string {
  return path.join(viamHome, 'diagnostics.data', partId ?? 'local-config');
}

export function createDiagnosticsExtension(
  allExtensions: () => readonly MachineExtension[],
): MachineExtension {
  const timers: NodeJS.Timeout[] = [];
  let closeSampler: (() => void) | undefined;
  return {
    name: 'diagnostics',
    async start(host: MachineHost) {
      const { ftdc, outputTelemetry, viamHome } = host.options;
      if (!ftdc && !outputTelemetry) return;
      const sampler = createMetricsSampler(host, allExtensions());
      closeSampler = sampler.close;
      if (ftdc) {
        const directory = diagnosticsDirectory(viamHome, host.cloud?.partId);
        const writer = createFtdcWriter({ directory });
        let busy = false;
        let warned = false;
        timers.push(
          setInterval(() => {
            if (busy) return;
            busy = true;
            writer
              .write(host.clock.now(), sampler())
              .catch((error: unknown) => {
                if (!warned) host.logger.warn('FTDC write failed', { directory, error: errorMessage(error) });
                warned = true;
              })
              .finally(() => {
                busy = false;
              });
          }, 1000),
        );
      }
      if (outputTelemetry) {
        timers.push(
          setInterval(
            () => process.stdout.write(`${JSON.stringify({ telemetry: sampler(), at: host.clock.now() })}\n`),
            10_000,
          ),
        );
      }
      for (const timer of timers) timer.unref();
    },
    async stop() {
      for (const timer of timers) clearInterval(timer);
      closeSampler?.();
    },
  };
}
