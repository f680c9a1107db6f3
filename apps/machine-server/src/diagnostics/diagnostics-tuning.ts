/**
 * The timings and limits of FTDC and `-output-telemetry` (machine-runtime.md A6). The defaults are the
 * spec's; environment variables override them (tests use tiny files and short intervals):
 * `MCLOUD_FTDC_INTERVAL_MS` (sample every 1000 ms), `MCLOUD_FTDC_MAX_FILE_BYTES` (roll over at 10 MB),
 * `MCLOUD_FTDC_MAX_FILES` (keep the newest 20), `MCLOUD_FTDC_UPLOAD_INTERVAL_MS` (upload completed files
 * every 60 s), `MCLOUD_TELEMETRY_INTERVAL_MS` (print metrics every 10 s).
 */
import { MachineError } from '../errors.ts';

export interface DiagnosticsTuning {
  readonly ftdcIntervalMs: number;
  readonly ftdcMaxFileBytes: number;
  readonly ftdcMaxFiles: number;
  readonly ftdcUploadIntervalMs: number;
  readonly telemetryIntervalMs: number;
}

export const defaultDiagnosticsTuning: DiagnosticsTuning = {
  ftdcIntervalMs: 1000,
  ftdcMaxFileBytes: 10 * 1024 * 1024,
  ftdcMaxFiles: 20,
  ftdcUploadIntervalMs: 60_000,
  telemetryIntervalMs: 10_000,
};

const variables: readonly { key: keyof DiagnosticsTuning; name: string; min: number; max: number }[] = [
  { key: 'ftdcIntervalMs', name: 'MCLOUD_FTDC_INTERVAL_MS', min: 10, max: 3_600_000 },
  { key: 'ftdcMaxFileBytes', name: 'MCLOUD_FTDC_MAX_FILE_BYTES', min: 256, max: 1024 ** 3 },
  { key: 'ftdcMaxFiles', name: 'MCLOUD_FTDC_MAX_FILES', min: 1, max: 10_000 },
  { key: 'ftdcUploadIntervalMs', name: 'MCLOUD_FTDC_UPLOAD_INTERVAL_MS', min: 10, max: 86_400_000 },
  { key: 'telemetryIntervalMs', name: 'MCLOUD_TELEMETRY_INTERVAL_MS', min: 10, max: 3_600_000 },
];

/** The tuning from the environment; throws InvalidArgument naming the variable, its value and the range. */
export function diagnosticsTuningFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): DiagnosticsTuning {
  const tuning: Record<keyof DiagnosticsTuning, number> = { ...defaultDiagnosticsTuning };
  for (const { key, name, min, max } of variables) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const value = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || value < min || value > max) {
      throw new MachineError(
        'InvalidArgument',
        `${name}: must be a whole number between ${min} and ${max} (got ${JSON.stringify(raw)})`,
      );
    }
    tuning[key] = value;
  }
  return tuning;
}
