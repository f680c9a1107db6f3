/**
 * After every cloud read the local-only fields of the `cloud` section (`id`, `secret`, `api_key`,
 * `app_address`, `refresh_interval`) come from the local file — the cloud cannot change how the machine
 * authenticates — and a local `network.bind_address` is kept when the cloud sets none (A1.1).
 */
import { isJsonObject, type JsonObject } from '../json.ts';

const localOnlyKeys = ['id', 'secret', 'api_key', 'app_address', 'refresh_interval'] as const;

export function mergeLocalCloudFields(cloudJson: JsonObject, localJson: JsonObject): JsonObject {
  const merged: JsonObject = { ...cloudJson };
  const localCloud = isJsonObject(localJson.cloud) ? localJson.cloud : {};
  const cloud: JsonObject = { ...(isJsonObject(cloudJson.cloud) ? cloudJson.cloud : {}) };
  for (const key of localOnlyKeys) {
    const value = localCloud[key];
    if (value === undefined) delete cloud[key];
    else cloud[key] = value;
  }
  merged.cloud = cloud;
  const localNetwork = isJsonObject(localJson.network) ? localJson.network : undefined;
  const cloudNetwork = isJsonObject(cloudJson.network) ? cloudJson.network : undefined;
  if (localNetwork?.bind_address !== undefined && !cloudNetwork?.bind_address) {
    merged.network = { ...(cloudNetwork ?? {}), bind_address: localNetwork.bind_address };
  }
  return merged;
}
