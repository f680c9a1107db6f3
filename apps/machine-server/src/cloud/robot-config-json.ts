/**
 * `viam.app.v1.RobotConfig` (what `RobotService.Config` returns) → the JSON shape of a config file, so
 * one parser (config/machine-config.ts) reads files, the cache and the cloud. This JSON is also what
 * is cached on disk (A1.4: the unprocessed config as received).
 */
import { toJson } from '@bufbuild/protobuf';
import { robotPb } from '@mcloud/protocol/machine';
import { isJsonObject, type JsonObject, type JsonValue } from '../json.ts';

const credentialTypes: Record<string, string> = {
  CREDENTIALS_TYPE_INTERNAL: 'internal',
  CREDENTIALS_TYPE_API_KEY: 'api-key',
  CREDENTIALS_TYPE_ROBOT_SECRET: 'robot-secret',
  CREDENTIALS_TYPE_ROBOT_LOCATION_SECRET: 'robot-location-secret',
};

export function robotConfigToJson(config: robotPb.RobotConfig): JsonObject {
  const json = toJson(robotPb.RobotConfigSchema, config, { useProtoFieldName: true }) as JsonObject;
  const auth = json.auth;
  if (isJsonObject(auth) && Array.isArray(auth.handlers)) {
    auth.handlers = auth.handlers.map((handler) =>
      isJsonObject(handler) ? { ...handler, type: credentialType(handler.type) } : handler,
    );
  }
  if (Array.isArray(json.modules)) {
    json.modules = json.modules.map((module) => {
      if (!isJsonObject(module)) return module;
      const { path, ...rest } = module;
      return path === undefined ? rest : { ...rest, executable_path: path };
    });
  }
  if (Array.isArray(json.remotes)) {
    json.remotes = json.remotes.map((remote) => {
      if (!isJsonObject(remote) || !isJsonObject(remote.auth) || !isJsonObject(remote.auth.credentials))
        return remote;
      const credentials = remote.auth.credentials;
      return {
        ...remote,
        auth: { ...remote.auth, credentials: { ...credentials, type: credentialType(credentials.type) } },
      };
    });
  }
  delete json.overwrite_fragment_status;
  return json;
}

function credentialType(value: JsonValue | undefined): JsonValue {
  return typeof value === 'string' ? (credentialTypes[value] ?? value) : (value ?? '');
}
