import type { Queryable } from '../../infra/postgres/database.ts';

/** What a download of a binary item needs: where its bytes are and how to label them. */
export interface DownloadableBinary {
  binaryDataId: string;
  blobKey: string;
  mimeType: string;
  sizeBytes: number;
  sha256Hex: string;
  /** A file name for Content-Disposition: the uploaded name's last segment, else `<file id><ext>`. */
  downloadName: string;
}

export async function findDownloadableBinary(
  db: Queryable,
  binaryDataId: string,
): Promise<DownloadableBinary | undefined> {
  const result = await db.query<{
    id: string;
    blob_key: string;
    mime_type: string;
    size_bytes: string;
    sha256: string;
    file_name: string;
    file_ext: string;
  }>(
    'SELECT id, blob_key, mime_type, size_bytes, sha256, file_name, file_ext FROM binary_data WHERE id = $1',
    [binaryDataId],
  );
  const row = result.rows[0];
  if (!row) return undefined;
  const uploadedName = row.file_name.slice(
    Math.max(row.file_name.lastIndexOf('/'), row.file_name.lastIndexOf('\\')) + 1,
  );
  const fileId = row.id.slice(row.id.lastIndexOf('/') + 1);
  return {
    binaryDataId: row.id,
    blobKey: row.blob_key,
    mimeType: row.mime_type || 'application/octet-stream',
    sizeBytes: Number(row.size_bytes),
    sha256Hex: row.sha256,
    downloadName: uploadedName || `${fileId}${row.file_ext}`,
  };
}
