import type { Queryable } from '../../infra/postgres/database.ts';

export interface MemberRecord {
  userId: string;
  email: string;
  dateAdded: Date;
  lastAccess: Date | null;
}

export async function upsertUser(
  db: Queryable,
  user: { id: string; email: string; createdAt: Date },
): Promise<string> {
  const result = await db.query<{ id: string }>(
    `INSERT INTO users (id, email, created_at) VALUES ($1, $2, $3)
     ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email RETURNING id`,
    [user.id, user.email, user.createdAt],
  );
  return result.rows[0]?.id as string;
}

/** Returns false when the user already was a member. */
export async function insertMember(
  db: Queryable,
  organizationId: string,
  userId: string,
  dateAdded: Date,
): Promise<boolean> {
  const result = await db.query(
    'INSERT INTO organization_members (organization_id, user_id, date_added) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
    [organizationId, userId, dateAdded],
  );
  return (result.rowCount ?? 0) > 0;
}

export async function listMembers(db: Queryable, organizationId: string): Promise<MemberRecord[]> {
  const result = await db.query<{
    user_id: string;
    email: string;
    date_added: Date;
    last_access: Date | null;
  }>(
    `SELECT m.user_id, u.email, m.date_added, m.last_access FROM organization_members m JOIN users u ON u.id = m.user_id
      WHERE m.organization_id = $1 ORDER BY m.date_added, u.email`,
    [organizationId],
  );
  return result.rows.map((row) => ({
    userId: row.user_id,
    email: row.email,
    dateAdded: row.date_added,
    lastAccess: row.last_access,
  }));
}

export async function deleteMember(db: Queryable, organizationId: string, userId: string): Promise<boolean> {
  await db.query(
    "DELETE FROM authorizations WHERE organization_id = $1 AND identity_type = 'user' AND identity_id = $2",
    [organizationId, userId],
  );
  const result = await db.query(
    'DELETE FROM organization_members WHERE organization_id = $1 AND user_id = $2',
    [organizationId, userId],
  );
  return (result.rowCount ?? 0) > 0;
}

/** The user with this email, if they are a member of one of `organizationIds`. */
export async function findMemberUserByEmail(
  db: Queryable,
  email: string,
  organizationIds: readonly string[],
): Promise<string | undefined> {
  const result = await db.query<{ id: string }>(
    `SELECT u.id FROM users u WHERE lower(u.email) = lower($1)
        AND EXISTS (SELECT 1 FROM organization_members m WHERE m.user_id = u.id AND m.organization_id = ANY($2::uuid[]))`,
    [email, organizationIds],
  );
  return result.rows[0]?.id;
}

/** Emails of the organization's members who hold the organization owner role. */
export async function listOwnerEmails(db: Queryable, organizationId: string): Promise<string[]> {
  const result = await db.query<{ email: string }>(
    `SELECT u.email FROM organization_members m JOIN users u ON u.id = m.user_id
      WHERE m.organization_id = $1 AND EXISTS (
        SELECT 1 FROM authorizations a WHERE a.organization_id = $1 AND a.identity_type = 'user' AND a.identity_id = m.user_id::text
           AND a.role = 'owner' AND a.resource_type = 'organization' AND a.resource_id = $1::uuid::text)
      ORDER BY u.email`,
    [organizationId],
  );
  return result.rows.map((row) => row.email);
}
