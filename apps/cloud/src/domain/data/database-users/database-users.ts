import type { Database } from '../../../infra/postgres/database.ts';
import { withTransaction } from '../../../infra/postgres/database.ts';
import { requireOrganizationRole } from '../../auth/permissions.ts';
import type { Principal } from '../../auth/principal.ts';
import { DomainError, invalidArgument } from '../../errors.ts';
import type { Clock } from '../../shared/clock.ts';
import { requireUuid } from '../../validate.ts';
import { scramSha256Verifier } from './scram-verifier.ts';

/**
 * Database users for BI tools (ConfigureDatabaseUser, GetDatabaseConnection). Each organization gets one
 * PostgreSQL LOGIN role `mcloud_org_<organization id hex>`, a member of `mcloud_query`, listed in
 * `mcloud_private.database_users`: it can SELECT `sensordata.readings` (and what later migrations grant
 * to `mcloud_query`) and `mcloud_private.query_organization()` maps its `session_user` to its
 * organization, so it sees that organization's rows only and cannot write (no privilege on any table;
 * read-only by default as well). Configuring again resets the password.
 */

export interface DatabaseUserDeps {
  db: Database;
  clock: Clock;
  config: {
    databasePublicHost: string | undefined;
    databasePublicPort: number | undefined;
  };
}

export const passwordRules = { minLength: 8, maxLength: 128 } as const;
/** Per-role cap so one organization's BI tools cannot take every connection of the server. */
const connectionLimit = 10;
const statementTimeoutMs = 60_000;
/**
 * A BI session left idle inside a transaction keeps its lock on `readings`, which blocks the creation of the
 * next month's partition (ingest for every organization) and everything queued behind it: ended after this.
 */
const idleInTransactionTimeoutMs = 60_000;

/** Temporary files one session of a database user may hold at once (it cannot raise it). */
const tempFileLimit = '1GB';

/** The role's defaults, set when it is created and again when its password is reset (migration 0029). */
const roleSettings = [
  'search_path = sensordata',
  'default_transaction_read_only = on',
  `statement_timeout = ${statementTimeoutMs}`,
  `idle_in_transaction_session_timeout = ${idleInTransactionTimeoutMs}`,
];

export function databaseRoleName(organizationId: string): string {
  return `mcloud_org_${organizationId.replaceAll('-', '').toLowerCase()}`;
}

export async function configureDatabaseUser(
  deps: DatabaseUserDeps,
  principal: Principal,
  input: { organizationId: string; password: string },
): Promise<void> {
  const organizationId = requireUuid('organization_id', input.organizationId);
  requireOrganizationRole(principal, organizationId, 'owner');
  const verifier = scramSha256Verifier(validatePassword(input.password));
  const role = databaseRoleName(organizationId);
  const nowMs = deps.clock.nowMs();
  try {
    await withTransaction(deps.db, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [role]);
      const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
      // The role name is derived from a validated UUID and the verifier is base64: both safe to inline.
      if (exists.rowCount === 0) {
        await client.query(
          `CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION INHERIT
             CONNECTION LIMIT ${connectionLimit} PASSWORD '${verifier}' IN ROLE mcloud_query`,
        );
      } else {
        await client.query(`ALTER ROLE ${role} WITH LOGIN PASSWORD '${verifier}'`);
      }
      for (const setting of roleSettings) await client.query(`ALTER ROLE ${role} SET ${setting}`);
      // Sorts and hashes spill to temporary files without bound by default: cap them per session so a BI
      // query cannot fill the disk everybody shares. Only a superuser (or a role granted SET on it) may set
      // this; otherwise the role goes without (README, database users).
      await client.query('SAVEPOINT temp_file_limit');
      try {
        await client.query(`ALTER ROLE ${role} SET temp_file_limit = '${tempFileLimit}'`);
      } catch (error) {
        if ((error as { code?: string }).code !== '42501') throw error;
        await client.query('ROLLBACK TO SAVEPOINT temp_file_limit');
      }
      await client.query(
        `INSERT INTO mcloud_private.database_users (organization_id, role_name, created_at, updated_at)
         VALUES ($1, $2, $3, $3)
         ON CONFLICT (organization_id) DO UPDATE SET role_name = EXCLUDED.role_name, updated_at = EXCLUDED.updated_at`,
        [organizationId, role, new Date(nowMs)],
      );
    });
  } catch (error) {
    if ((error as { code?: string }).code === '42501') {
      throw new DomainError(
        'FailedPrecondition',
        'the cloud database role may not create roles (needs CREATEROLE); database users are unavailable',
        { cause: error },
      );
    }
    throw error;
  }
}

function validatePassword(password: string): string {
  const { minLength, maxLength } = passwordRules;
  if (password.length < minLength || password.length > maxLength) {
    throw invalidArgument(
      'password',
      `must be ${minLength} to ${maxLength} characters long (got ${password.length})`,
    );
  }
  if (!/^[\x20-\x7e]+$/.test(password)) {
    throw invalidArgument(
      'password',
      'may contain only printable ASCII characters (letters, digits, punctuation, space)',
    );
  }
  return password;
}

export interface DatabaseConnection {
  /** `host` or `host:port` when the port is not PostgreSQL's default 5432. */
  hostname: string;
  /** `postgresql://<role>@<host>:<port>/<database>` — without the password. */
  uri: string;
  hasDatabaseUser: boolean;
}

export async function getDatabaseConnection(
  deps: DatabaseUserDeps,
  principal: Principal,
  input: { organizationId: string },
): Promise<DatabaseConnection> {
  const organizationId = requireUuid('organization_id', input.organizationId);
  requireOrganizationRole(principal, organizationId, 'operator');
  const found = await deps.db.query(
    'SELECT 1 FROM mcloud_private.database_users WHERE organization_id = $1',
    [organizationId],
  );
  const database = new URL(deps.db.options.connectionString ?? 'postgresql://localhost/postgres');
  const host = deps.config.databasePublicHost ?? database.hostname;
  const port = deps.config.databasePublicPort ?? (Number(database.port) || 5432);
  const uriHost = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const name = decodeURIComponent(database.pathname.slice(1)) || 'postgres';
  return {
    hostname: port === 5432 ? host : `${uriHost}:${port}`,
    uri: `postgresql://${databaseRoleName(organizationId)}@${uriHost}:${port}/${encodeURIComponent(name)}`,
    hasDatabaseUser: (found.rowCount ?? 0) > 0,
  };
}
