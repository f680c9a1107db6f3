import { startCloud } from '../cloud-app.ts';
import { loadCloudConfig } from '../config/cloud-config.ts';

/** `mcloud serve`: runs until SIGINT/SIGTERM; a second signal forces the exit. */
export async function serveCommand(args: string[]): Promise<number> {
  const config = loadCloudConfig(args);
  const cloud = await startCloud(config, {
    logger: {
      info: (message) => console.log(message),
      error: (message, error) => console.error(message, error),
    },
  });
  console.log(
    `mcloud listening on ${cloud.url} (data dir ${config.dataDir}, database ${config.databaseUrl ? 'external' : 'embedded'})`,
  );
  if (cloud.bootstrap) {
    console.log('first start: created organization "default", location "default" and an owner API key');
    console.log(`  organization_id ${cloud.bootstrap.organization_id}`);
    console.log(`  location_id     ${cloud.bootstrap.location_id}`);
    console.log(`  api_key_id      ${cloud.bootstrap.api_key_id}`);
    console.log(`  api_key         ${cloud.bootstrap.api_key}`);
    console.log(`  (saved to ${config.dataDir}/bootstrap.json)`);
  }
  await new Promise<void>((resolve) => {
    const onSignal = (signal: string) => {
      console.log(`${signal}: shutting down`);
      process.once('SIGINT', () => process.exit(130));
      process.once('SIGTERM', () => process.exit(143));
      resolve();
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });
  await cloud.stop();
  return 0;
}
