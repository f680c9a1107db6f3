/**
 * Where capture files live and what they are called (machine-runtime.md A5.3):
 * `<capture_dir>/<api>/<short name>/<method>` with every `:` replaced by `_`, file names from the local
 * time `2006-01-02T15:04:05.000000Z07:00` (colons → `_`) plus `.prog` while open, `.capture` when done.
 */
import path from 'node:path';

export const inProgressExtension = '.prog';
export const completedExtension = '.capture';
/** Sub-directories the syncer never walks. */
export const failedDirName = 'failed';
export const datasetUploadDirName = 'datasetUpload';
export const skippedDirNames: ReadonlySet<string> = new Set([failedDirName, datasetUploadDirName]);

export const dirMode = 0o700;
export const fileMode = 0o600;

/** `<capture_dir>/rdk_component_sensor/s1/Readings`. */
export function methodCaptureDir(captureDir: string, api: string, shortName: string, method: string): string {
  return path.join(captureDir, noColons(api), noColons(shortName), noColons(method));
}

function noColons(text: string): string {
  return text.replaceAll(':', '_');
}

/**
 * `2026-11-20T23_36_34.123456+01_00`. Lexical order is time order within one directory (same offset);
 * `sequence` (0-999) fills the sub-millisecond digits so files made in the same millisecond stay unique
 * and ordered.
 */
export function captureFileStem(timeMs: number, sequence = 0): string {
  const date = new Date(timeMs);
  const pad = (value: number, width = 2) => String(value).padStart(width, '0');
  const offsetMinutes = -date.getTimezoneOffset();
  const sign = offsetMinutes >= 0 ? '+' : '-';
  const absolute = Math.abs(offsetMinutes);
  const zone = offsetMinutes === 0 ? 'Z' : `${sign}${pad(Math.floor(absolute / 60))}_${pad(absolute % 60)}`;
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}` +
    `T${pad(date.getHours())}_${pad(date.getMinutes())}_${pad(date.getSeconds())}` +
    `.${pad(date.getMilliseconds(), 3)}${pad(sequence % 1000, 3)}${zone}`
  );
}

export function isCaptureFile(name: string): boolean {
  return name.endsWith(completedExtension);
}

export function isInProgressFile(name: string): boolean {
  return name.endsWith(inProgressExtension);
}

/** `x.prog` → `x.capture`. */
export function completedPathOf(inProgressPath: string): string {
  return `${inProgressPath.slice(0, -inProgressExtension.length)}${completedExtension}`;
}

/** `<root>/failed/<path relative to root>`. */
export function failedPathOf(root: string, filePath: string): string {
  return path.join(root, failedDirName, path.relative(root, filePath));
}
