import { ConfigError } from '../config/cloud-config.ts';
import { adminCreateOrgCommand } from './admin-create-org-command.ts';
import { serveCommand } from './serve-command.ts';
import { triggersCommand, triggersUsage } from './triggers-command.ts';

const usage = `usage:
  mcloud serve [--data-dir DIR] [--host HOST] [--port PORT] [--database-url URL]
               [--tls-cert FILE --tls-key FILE] [--public-url URL] [--config-file FILE]
               [--s3-bucket B [--s3-endpoint URL] [--s3-region R]]
  mcloud admin create-org --name NAME [--data-dir DIR | --database-url URL] [--json]
${triggersUsage}`;

/** Dispatches `mcloud <command>`; returns the process exit code. */
export async function runCli(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  try {
    if (command === 'serve') return await serveCommand(rest);
    if (command === 'admin' && rest[0] === 'create-org') return await adminCreateOrgCommand(rest.slice(1));
    if (command === 'triggers') return await triggersCommand(rest);
    if (command === undefined || command === '--help' || command === 'help') {
      console.log(usage);
      return command === undefined ? 2 : 0;
    }
    console.error(`mcloud: unknown command ${JSON.stringify(args.join(' '))}\n${usage}`);
    return 2;
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`mcloud: ${error.message}`);
      return 2;
    }
    throw error;
  }
}
