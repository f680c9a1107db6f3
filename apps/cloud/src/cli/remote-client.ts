import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { DescService } from '@bufbuild/protobuf';
import { type Client, createClient, type Interceptor, type Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { authPb } from '@mcloud/protocol';
import { ConfigError } from '../config/cloud-config.ts';

/** Flags every command that talks to a running cloud accepts (parseArgs options). */
export const remoteOptions = {
  url: { type: 'string' },
  'api-key-id': { type: 'string' },
  'api-key': { type: 'string' },
  'data-dir': { type: 'string' },
} as const;

export interface RemoteTarget {
  url: string;
  apiKeyId: string;
  apiKey: string;
}

/**
 * Where and as whom to call: `--url`, `--api-key-id`, `--api-key`, else `MCLOUD_URL`, `MCLOUD_API_KEY_ID`,
 * `MCLOUD_API_KEY`, else the bootstrap.json of `--data-dir` (default `MCLOUD_DATA_DIR` or ./mcloud-data).
 */
export async function resolveRemoteTarget(
  values: { url?: string; 'api-key-id'?: string; 'api-key'?: string; 'data-dir'?: string },
  env: NodeJS.ProcessEnv = process.env,
): Promise<RemoteTarget> {
  let url = values.url ?? env.MCLOUD_URL;
  let apiKeyId = values['api-key-id'] ?? env.MCLOUD_API_KEY_ID;
  let apiKey = values['api-key'] ?? env.MCLOUD_API_KEY;
  if (!url || !apiKeyId || !apiKey) {
    const dataDir = path.resolve(values['data-dir'] ?? env.MCLOUD_DATA_DIR ?? './mcloud-data');
    const file = path.join(dataDir, 'bootstrap.json');
    let bootstrap: { url?: string; api_key_id?: string; api_key?: string };
    try {
      bootstrap = JSON.parse(await readFile(file, 'utf8'));
    } catch (error) {
      throw new ConfigError(
        `give --url, --api-key-id and --api-key (or MCLOUD_URL, MCLOUD_API_KEY_ID, MCLOUD_API_KEY): cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
    url ??= bootstrap.url;
    apiKeyId ??= bootstrap.api_key_id;
    apiKey ??= bootstrap.api_key;
  }
  if (!url || !apiKeyId || !apiKey) throw new ConfigError('--url, --api-key-id and --api-key are required');
  return { url: url.replace(/\/$/, ''), apiKeyId, apiKey };
}

/** Exchanges the API key for an access token; returns a transport that sends it on every call. */
export async function connectRemote(target: RemoteTarget): Promise<Transport> {
  const auth = createClient(authPb.AuthService, createGrpcTransport({ baseUrl: target.url }));
  const { accessToken } = await auth.authenticate({
    entity: target.apiKeyId,
    credentials: { type: 'api-key', payload: target.apiKey },
  });
  const bearer: Interceptor = (next) => (req) => {
    req.header.set('authorization', `Bearer ${accessToken}`);
    return next(req);
  };
  return createGrpcTransport({ baseUrl: target.url, interceptors: [bearer] });
}

export async function remoteClient<S extends DescService>(
  service: S,
  target: RemoteTarget,
): Promise<Client<S>> {
  return createClient(service, await connectRemote(target));
}
