import type { ServiceImpl } from '@connectrpc/connect';
import type { dataPb } from '@mcloud/protocol';
import type { CloudDeps } from '../../cloud-deps.ts';
import {
  configureDatabaseUser,
  getDatabaseConnection,
} from '../../domain/data/database-users/database-users.ts';
import { tabularDataBySql } from '../../domain/data/sql/tabular-data-by-sql.ts';
import { principalOf } from '../context.ts';

/**
 * DataService RPCs of the SQL path: TabularDataBySQL (wire-protocol §2.3, §3.4) and the database user for
 * BI tools (GetDatabaseConnection, ConfigureDatabaseUser). `mongodb_uri` carries the `postgresql://` URI.
 */
export function sqlQueryHandlers(
  deps: CloudDeps,
): Pick<
  ServiceImpl<typeof dataPb.DataService>,
  'tabularDataBySQL' | 'getDatabaseConnection' | 'configureDatabaseUser'
> {
  return {
    async tabularDataBySQL(req, context) {
      const rawData = await tabularDataBySql(
        { db: deps.db, clock: deps.clock, queryLimits: deps.config.queryLimits },
        principalOf(context),
        { organizationId: req.organizationId, sqlQuery: req.sqlQuery },
        context.signal,
      );
      return { rawData };
    },

    async getDatabaseConnection(req, context) {
      const connection = await getDatabaseConnection(deps, principalOf(context), {
        organizationId: req.organizationId,
      });
      return {
        hostname: connection.hostname,
        mongodbUri: connection.uri,
        hasDatabaseUser: connection.hasDatabaseUser,
      };
    },

    async configureDatabaseUser(req, context) {
      await configureDatabaseUser(deps, principalOf(context), {
        organizationId: req.organizationId,
        password: req.password,
      });
      return {};
    },
  };
}
