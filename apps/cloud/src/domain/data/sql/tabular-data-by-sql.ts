import { requireOrganizationRole } from '../../auth/permissions.ts';
import type { Principal } from '../../auth/principal.ts';
import { requireUuid } from '../../validate.ts';
import {
  type OrganizationQueryDeps,
  type QueryLimits,
  runOrganizationQuery,
} from '../query-access/organization-query.ts';
import { prepareUserSql } from './user-sql.ts';

export interface SqlQueryDeps extends OrganizationQueryDeps {
  queryLimits: QueryLimits;
}

/**
 * TabularDataBySQL: one SELECT over the caller's organization's `readings` (wire-protocol §3.4), each
 * result row one BSON document. Needs an organization-level role (service-spec, Authentication rule 2).
 * The statement is admitted and rewritten by `prepareUserSql`, then run by `runOrganizationQuery` under
 * the database-enforced organization scope with the configured time, row and byte budgets.
 */
export async function tabularDataBySql(
  deps: SqlQueryDeps,
  principal: Principal,
  input: { organizationId: string; sqlQuery: string },
  signal: AbortSignal,
): Promise<Uint8Array[]> {
  const organizationId = requireUuid('organization_id', input.organizationId);
  requireOrganizationRole(principal, organizationId, 'operator');
  const prepared = await prepareUserSql(input.sqlQuery, 'sql_query');
  const result = await runOrganizationQuery(
    deps,
    { organizationId, sql: prepared.sql, limits: deps.queryLimits, mapPosition: prepared.mapPosition },
    signal,
  );
  return result.documents;
}
