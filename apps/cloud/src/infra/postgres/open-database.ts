import { createDatabase, type Database } from './database.ts';
import { startEmbeddedPostgres } from './embedded-postgres-server.ts';
import { migrate } from './migrate.ts';

export interface OpenedDatabase {
  db: Database;
  url: string;
  close(): Promise<void>;
}

/**
 * The external PostgreSQL when a URL is given; otherwise the embedded cluster in the data directory,
 * started on demand. Either way the schema is migrated before anyone uses it.
 */
export async function openDatabase(options: {
  databaseUrl: string | undefined;
  dataDir: string;
  /** Extra address the embedded PostgreSQL listens on (see startEmbeddedPostgres). */
  listenHost?: string;
  onLog?: (line: string) => void;
}): Promise<OpenedDatabase> {
  const embedded = options.databaseUrl
    ? undefined
    : await startEmbeddedPostgres({
        dataDir: options.dataDir,
        databaseName: 'mcloud',
        ...(options.listenHost ? { listenHost: options.listenHost } : {}),
        ...(options.onLog ? { onLog: options.onLog } : {}),
      });
  const url = options.databaseUrl ?? (embedded?.url as string);
  const db = createDatabase(url);
  try {
    await migrate(db);
  } catch (error) {
    await db.end();
    await embedded?.stop();
    throw error;
  }
  return {
    db,
    url,
    async close() {
      await db.end();
      await embedded?.stop();
    },
  };
}
