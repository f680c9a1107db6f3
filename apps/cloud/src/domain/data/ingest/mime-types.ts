/**
 * File extension ⇄ MIME type, covering what RDK uploads (wire-protocol §2.5) and common files. Extensions
 * carry their leading dot; lookups ignore case.
 */

const mimeByExtension: Readonly<Record<string, string>> = {
  '.jpeg': 'image/jpeg',
  '.jpg': 'image/jpeg',
  '.png': 'image/png',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.bmp': 'image/bmp',
  '.qoi': 'image/qoi',
  '.dep': 'image/vnd.viam.dep',
  '.rgba': 'image/vnd.viam.rgba',
  '.pcd': 'pointcloud/pcd',
  '.mp4': 'video/mp4',
  '.h264': 'video/h264',
  '.mp3': 'audio/mpeg',
  '.wav': 'audio/wav',
  '.json': 'application/json',
  '.txt': 'text/plain',
  '.log': 'text/plain',
  '.csv': 'text/csv',
  '.pdf': 'application/pdf',
  '.zip': 'application/zip',
  '.gz': 'application/gzip',
  '.tar': 'application/x-tar',
  '.onnx': 'application/octet-stream',
  '.bin': 'application/octet-stream',
};

/** The preferred extension of each MIME type (the first listed above wins, so image/jpeg → .jpeg). */
const extensionByMime: Readonly<Record<string, string>> = (() => {
  const result: Record<string, string> = {};
  for (const [extension, mime] of Object.entries(mimeByExtension)) result[mime] ??= extension;
  result['application/octet-stream'] = '';
  return result;
})();

export const DEFAULT_MIME_TYPE = 'application/octet-stream';

/** `.JPG` → `image/jpeg`; undefined for unknown or empty extensions. */
export function mimeTypeFromExtension(extension: string): string | undefined {
  return mimeByExtension[normalizeExtension(extension).toLowerCase()];
}

/** `image/png` → `.png`; undefined for unknown types. Parameters (`; charset=…`) are ignored. */
export function extensionFromMimeType(mimeType: string): string | undefined {
  const bare = mimeType.split(';')[0]?.trim().toLowerCase() ?? '';
  const extension = extensionByMime[bare];
  return extension === '' ? undefined : extension;
}

/** `jpeg` → `.jpeg`; `''` stays empty. */
export function normalizeExtension(extension: string): string {
  const trimmed = extension.trim();
  if (trimmed === '') return '';
  return trimmed.startsWith('.') ? trimmed : `.${trimmed}`;
}

/** The extension of the last path segment of a file name (`/a/b/c.tar.gz` → `.gz`), or `''`. */
export function extensionOfFileName(fileName: string): string {
  const base = fileName.slice(Math.max(fileName.lastIndexOf('/'), fileName.lastIndexOf('\\')) + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot) : '';
}

/**
 * Picks the stored extension and MIME type from what the client sent: an explicit extension, else the file
 * name's, else one derived from the MIME type; an explicit MIME type, else one derived from the extension.
 */
export function resolveFileType(input: { fileExtension: string; fileName: string; mimeType: string }): {
  fileExt: string;
  mimeType: string;
} {
  const explicitMime = input.mimeType.trim();
  let fileExt = normalizeExtension(input.fileExtension) || extensionOfFileName(input.fileName);
  if (!fileExt && explicitMime) fileExt = extensionFromMimeType(explicitMime) ?? '';
  const mimeType = explicitMime || mimeTypeFromExtension(fileExt) || DEFAULT_MIME_TYPE;
  return { fileExt, mimeType };
}
