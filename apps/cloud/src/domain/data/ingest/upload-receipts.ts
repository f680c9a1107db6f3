import type { Queryable } from '../../../infra/postgres/database.ts';

/** The binary data ID stored for an earlier upload with this idempotency key, if any. */
export async function findReceipt(
  db: Queryable,
  organizationId: string,
  idempotencyKey: Buffer,
): Promise<string | undefined> {
  const result = await db.query<{ file_id: string }>(
    'SELECT file_id FROM upload_receipts WHERE organization_id = $1 AND idempotency_key = $2',
    [organizationId, idempotencyKey],
  );
  return result.rows[0]?.file_id;
}
