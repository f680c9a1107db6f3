import { create } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import { dataPb } from '@mcloud/protocol';
import type { CloudDeps } from '../../cloud-deps.ts';
import {
  configureDatabaseUser,
  getDatabaseConnection,
} from '../../domain/data/database-users/database-users.ts';
import { tabularDataBySql } from '../../domain/data/sql/tabular-data-by-sql.ts';
import { principalOf } from '../context.ts';
import { encodedRepeatedBytes } from './encoded-bytes-field.ts';

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
      // Binary codecs get the documents already laid out as the `raw_data` field (encoded-bytes-field.ts);
      // JSON codecs (Connect or gRPC-web with JSON) do not write unknown fields, so they get the field.
      if (isJsonRequest(context.requestHeader)) return { rawData };
      const response = create(dataPb.TabularDataBySQLResponseSchema);
      response.$unknown = encodedRepeatedBytes(
        dataPb.TabularDataBySQLResponseSchema.field.rawData.number,
        rawData,
      );
      return response;
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

/** Whether the call uses a JSON codec (`application/json`, `application/connect+json`, `application/grpc+json`…). */
function isJsonRequest(header: Headers): boolean {
  return /[/+]json\b/i.test(header.get('content-type') ?? '');
}
