import type { JsonObject, MessageInitShape } from '@bufbuild/protobuf';
import { robotPb } from '@mcloud/protocol';
import { failedPrecondition } from '../../domain/errors.ts';
import type { MachineConfigSource } from '../../domain/machines/machine-config.ts';
import { JsonReader } from './json-reader.ts';

type RobotConfigInit = MessageInitShape<typeof robotPb.RobotConfigSchema>;
type ComponentInit = MessageInitShape<typeof robotPb.ComponentConfigSchema>;
type ServiceInit = MessageInitShape<typeof robotPb.ServiceConfigSchema>;
type FrameInit = MessageInitShape<typeof robotPb.FrameSchema>;
type OrientationInit = MessageInitShape<typeof robotPb.OrientationSchema>;
type AuthInit = MessageInitShape<typeof robotPb.AuthConfigSchema>;

/**
 * The part's stored JSON configuration plus cloud-managed data → the typed `RobotConfig` a machine gets
 * from `RobotService.Config` (wire-protocol §4.2–4.3). Cloud-only keys (`agent`, `fragments`,
 * `fragment_mods`, `triggers`, …) are not forwarded.
 */
export function robotConfigFromJson(source: MachineConfigSource): RobotConfigInit {
  const json = JsonReader.of('robot_config', source.config);
  const maintenance = json.object('maintenance');
  const tracing = json.object('tracing');
  return {
    cloud: {
      id: source.partId,
      fqdn: source.fqdn,
      localFqdn: source.localFqdn,
      signalingAddress: source.signalingAddress,
      signalingInsecure: source.signalingInsecure,
      locationSecret: source.locationSecrets[0]?.secret ?? '',
      locationSecrets: source.locationSecrets.map((s) => ({ id: s.id, secret: s.secret })),
      primaryOrgId: source.organizationId,
      locationId: source.locationId,
      machineId: source.robotId,
    },
    remotes: json.objects('remotes').map(remoteFromJson),
    components: json.objects('components').map(componentFromJson),
    processes: json.objects('processes').map(processFromJson),
    services: json.objects('services').map(serviceFromJson),
    ...(json.has('network') && { network: networkFromJson(json.object('network') as JsonReader) }),
    auth: authFromJson(json.object('auth'), source.apiKeys),
    ...(json.bool('debug') !== undefined && { debug: json.bool('debug') }),
    modules: json.objects('modules').map(moduleFromJson),
    ...(json.bool('disable_partial_start') !== undefined && {
      disablePartialStart: json.bool('disable_partial_start'),
    }),
    packages: json.objects('packages').map((p) => ({
      name: p.string('name'),
      package: p.string('package'),
      version: p.string('version'),
      type: p.string('type'),
    })),
    enableWebProfile: json.bool('enable_web_profile') ?? false,
    log: json.objects('log').map((p) => ({ pattern: p.string('pattern'), level: p.string('level') })),
    revision: String(source.revision),
    ...(maintenance && {
      maintenance: {
        ...(maintenance.has('sensor_name') && {
          sensorName: resourceNameFromJson(maintenance.at('sensor_name'), maintenance.value.sensor_name),
        }),
        maintenanceAllowedKey: maintenance.string('maintenance_allowed_key'),
      },
    }),
    disableLogDeduplication: json.bool('disable_log_deduplication') ?? false,
    jobs: json.objects('jobs').map((j) => ({
      name: j.string('name'),
      schedule: j.string('schedule'),
      resource: j.string('resource'),
      method: j.string('method'),
      ...(j.has('command') && { command: j.struct('command') }),
      ...logConfiguration(j),
    })),
    ...(tracing && {
      tracing: {
        enabled: tracing.bool('enabled') ?? false,
        disk: tracing.bool('disk') ?? false,
        console: tracing.bool('console') ?? false,
        otlpEndpoint: tracing.string('otlp_endpoint'),
      },
    }),
  };
}

/** `api` must be a full `namespace:type:subtype`; legacy `type` (+ `namespace`) is expanded. */
function apiOf(resource: JsonReader, kind: 'component' | 'service'): string {
  const api = resource.string('api');
  if (api !== '') {
    if (api.split(':').length !== 3) {
      throw failedPrecondition(
        `${resource.at('api')}: must be "namespace:type:subtype" (got ${JSON.stringify(api)})`,
      );
    }
    return api;
  }
  const type = resource.string('type');
  if (type === '') throw failedPrecondition(`${resource.path}: needs "api" (or the legacy "type")`);
  return `${resource.string('namespace', 'rdk')}:${kind}:${type}`;
}

function modelOf(resource: JsonReader): string {
  const model = resource.string('model');
  return model !== '' && !model.includes(':') ? `rdk:builtin:${model}` : model;
}

function logConfiguration(resource: JsonReader) {
  const config = resource.object('log_configuration');
  return config ? { logConfiguration: { level: config.string('level') } } : {};
}

function resourceServiceConfigs(resource: JsonReader) {
  const key = resource.has('service_configs') ? 'service_configs' : 'service_config';
  return resource.objects(key).map((c) => ({
    type: c.string('type'),
    ...(c.has('attributes') && { attributes: c.struct('attributes') }),
  }));
}

function componentFromJson(c: JsonReader): ComponentInit {
  const api = apiOf(c, 'component');
  return {
    name: c.string('name'),
    namespace: c.string('namespace'),
    type: c.string('type', api.split(':')[2]),
    model: modelOf(c),
    ...(c.has('frame') && { frame: frameFromJson(c.object('frame') as JsonReader) }),
    dependsOn: c.strings('depends_on'),
    serviceConfigs: resourceServiceConfigs(c),
    attributes: c.struct('attributes') ?? {},
    api,
    ...logConfiguration(c),
  };
}

function serviceFromJson(s: JsonReader): ServiceInit {
  const api = apiOf(s, 'service');
  return {
    name: s.string('name'),
    namespace: s.string('namespace'),
    type: s.string('type', api.split(':')[2]),
    attributes: s.struct('attributes') ?? {},
    dependsOn: s.strings('depends_on'),
    model: modelOf(s),
    api,
    serviceConfigs: resourceServiceConfigs(s),
    ...logConfiguration(s),
  };
}

function moduleFromJson(m: JsonReader): MessageInitShape<typeof robotPb.ModuleConfigSchema> {
  const type = m.string('type', 'local');
  const path = m.string('executable_path', m.string('path'));
  const unresolvedRegistry = type === 'registry' && path === '';
  return {
    name: m.string('name'),
    path,
    logLevel: m.string('log_level'),
    type,
    moduleId: m.string('module_id'),
    env: m.stringMap('env'),
    ...(unresolvedRegistry && {
      status: {
        error: `registry module ${JSON.stringify(m.string('module_id'))} cannot be resolved by this cloud; give its executable_path`,
      },
    }),
    ...(m.has('first_run_timeout') && { firstRunTimeout: m.duration('first_run_timeout') }),
    tcpMode: m.bool('tcp_mode') ?? false,
  };
}

function processFromJson(p: JsonReader): MessageInitShape<typeof robotPb.ProcessConfigSchema> {
  return {
    id: p.string('id'),
    name: p.string('name'),
    args: p.strings('args'),
    cwd: p.string('cwd'),
    oneShot: p.bool('one_shot') ?? false,
    log: p.bool('log') ?? false,
    stopSignal: p.integer('stop_signal', 0, 64) ?? 0,
    ...(p.has('stop_timeout') && { stopTimeout: p.duration('stop_timeout') }),
    env: p.stringMap('env'),
    username: p.string('username'),
  };
}

const credentialsTypes: Record<string, robotPb.CredentialsType> = {
  internal: robotPb.CredentialsType.INTERNAL,
  'api-key': robotPb.CredentialsType.API_KEY,
  'robot-secret': robotPb.CredentialsType.ROBOT_SECRET,
  'robot-location-secret': robotPb.CredentialsType.ROBOT_LOCATION_SECRET,
};

function credentialsTypeOf(reader: JsonReader, key: string): robotPb.CredentialsType {
  const name = reader.string(key);
  if (name === '') return robotPb.CredentialsType.UNSPECIFIED;
  const type = credentialsTypes[name];
  if (type === undefined) {
    throw failedPrecondition(
      `${reader.at(key)}: must be one of ${Object.keys(credentialsTypes).join(', ')} (got ${JSON.stringify(name)})`,
    );
  }
  return type;
}

function remoteFromJson(r: JsonReader): MessageInitShape<typeof robotPb.RemoteConfigSchema> {
  const auth = r.object('auth');
  const credentials = auth?.object('credentials');
  return {
    name: r.string('name'),
    address: r.string('address'),
    ...(r.has('frame') && { frame: frameFromJson(r.object('frame') as JsonReader) }),
    ...(auth && {
      auth: {
        entity: auth.string('entity'),
        ...(credentials && {
          credentials: {
            type: credentialsTypeOf(credentials, 'type'),
            payload: credentials.string('payload'),
          },
        }),
      },
    }),
    managedBy: r.string('managed_by'),
    insecure: r.bool('insecure') ?? false,
    ...(r.has('connection_check_interval') && {
      connectionCheckInterval: r.duration('connection_check_interval'),
    }),
    ...(r.has('reconnect_interval') && { reconnectInterval: r.duration('reconnect_interval') }),
    serviceConfigs: resourceServiceConfigs(r),
    secret: r.string('secret'),
    prefix: r.string('prefix'),
  };
}

function networkFromJson(n: JsonReader): MessageInitShape<typeof robotPb.NetworkConfigSchema> {
  const sessions = n.object('sessions');
  return {
    fqdn: n.string('fqdn'),
    bindAddress: n.string('bind_address'),
    tlsCertFile: n.string('tls_cert_file'),
    tlsKeyFile: n.string('tls_key_file'),
    ...(sessions && {
      sessions: sessions.has('heartbeat_window')
        ? { heartbeatWindow: sessions.duration('heartbeat_window') }
        : {},
    }),
    trafficTunnelEndpoints: n.objects('traffic_tunnel_endpoints').map((e) => ({
      port: e.integer('port', 0, 65_535) ?? 0,
      ...(e.has('connection_timeout') && { connectionTimeout: e.duration('connection_timeout') }),
    })),
    noTls: n.bool('no_tls') ?? false,
  };
}

/**
 * The user's `auth` section plus one `api-key` handler listing every API key authorized for this
 * machine (organization, location or machine level), so SDK clients can dial the machine with them.
 */
function authFromJson(auth: JsonReader | undefined, apiKeys: MachineConfigSource['apiKeys']): AuthInit {
  const handlers: MessageInitShape<typeof robotPb.AuthHandlerConfigSchema>[] = [];
  const apiKeyConfig: JsonObject = {};
  const keyIds: string[] = [];
  for (const handler of auth?.objects('handlers') ?? []) {
    const type = credentialsTypeOf(handler, 'type');
    const config = handler.object('config');
    if (type !== robotPb.CredentialsType.API_KEY) {
      handlers.push({ type, ...(config && { config: config.value }) });
      continue;
    }
    for (const id of config?.strings('keys') ?? []) {
      if (keyIds.includes(id)) continue;
      keyIds.push(id);
      apiKeyConfig[id] = config?.string(id) ?? '';
    }
  }
  for (const key of apiKeys) {
    if (keyIds.includes(key.id)) continue;
    keyIds.push(key.id);
    apiKeyConfig[key.id] = key.key;
  }
  if (keyIds.length > 0) {
    handlers.push({ type: robotPb.CredentialsType.API_KEY, config: { ...apiKeyConfig, keys: keyIds } });
  }
  const external = auth?.object('external_auth_config');
  const jwks = external?.object('jwks');
  return {
    handlers,
    tlsAuthEntities: auth?.strings('tls_auth_entities') ?? [],
    ...(external && { externalAuthConfig: jwks ? { jwks: { json: jwks.struct('json') ?? {} } } : {} }),
  };
}

function resourceNameFromJson(path: string, value: unknown) {
  if (typeof value === 'string') {
    // "rdk:component:sensor/name" or just "name".
    const slash = value.lastIndexOf('/');
    const [namespace = '', type = '', subtype = ''] = slash >= 0 ? value.slice(0, slash).split(':') : [];
    return { namespace, type, subtype, name: slash >= 0 ? value.slice(slash + 1) : value };
  }
  const name = JsonReader.of(path, value);
  return {
    namespace: name.string('namespace'),
    type: name.string('type'),
    subtype: name.string('subtype'),
    name: name.string('name'),
  };
}

function frameFromJson(f: JsonReader): FrameInit {
  const translation = f.object('translation');
  const orientation = f.object('orientation');
  const geometry = f.object('geometry');
  return {
    parent: f.string('parent'),
    ...(translation && {
      translation: {
        x: translation.number('x') ?? 0,
        y: translation.number('y') ?? 0,
        z: translation.number('z') ?? 0,
      },
    }),
    orientation: orientation
      ? orientationFromJson(orientation)
      : { type: { case: 'noOrientation', value: {} } },
    ...(geometry && { geometry: geometryFromJson(geometry) }),
  };
}

function orientationFromJson(o: JsonReader): OrientationInit {
  const value = o.object('value') ?? new JsonReader(o.at('value'), {});
  const n = (key: string) => value.number(key) ?? 0;
  const type = o.string('type');
  switch (type) {
    case '':
      return { type: { case: 'noOrientation', value: {} } };
    case 'ov_degrees':
      return { type: { case: 'vectorDegrees', value: { theta: n('th'), x: n('x'), y: n('y'), z: n('z') } } };
    case 'ov_radians':
      return { type: { case: 'vectorRadians', value: { theta: n('th'), x: n('x'), y: n('y'), z: n('z') } } };
    case 'euler_angles':
      return { type: { case: 'eulerAngles', value: { roll: n('roll'), pitch: n('pitch'), yaw: n('yaw') } } };
    case 'axis_angles':
      return { type: { case: 'axisAngles', value: { theta: n('th'), x: n('x'), y: n('y'), z: n('z') } } };
    case 'quaternion':
      return { type: { case: 'quaternion', value: { w: n('w'), x: n('x'), y: n('y'), z: n('z') } } };
    default:
      throw failedPrecondition(
        `${o.at('type')}: must be ov_degrees, ov_radians, euler_angles, axis_angles or quaternion (got ${JSON.stringify(type)})`,
      );
  }
}

function geometryFromJson(g: JsonReader): NonNullable<FrameInit['geometry']> {
  const translation = g.object('translation');
  const center = {
    x: translation?.number('x') ?? 0,
    y: translation?.number('y') ?? 0,
    z: translation?.number('z') ?? 0,
    oZ: 1,
  };
  const label = g.string('label');
  const type = g.string('type');
  switch (type) {
    case 'box':
      return {
        center,
        label,
        geometryType: {
          case: 'box',
          value: { dimsMm: { x: g.number('x') ?? 0, y: g.number('y') ?? 0, z: g.number('z') ?? 0 } },
        },
      };
    case 'sphere':
      return { center, label, geometryType: { case: 'sphere', value: { radiusMm: g.number('r') ?? 0 } } };
    case 'capsule':
      return {
        center,
        label,
        geometryType: {
          case: 'capsule',
          value: { radiusMm: g.number('r') ?? 0, lengthMm: g.number('l') ?? 0 },
        },
      };
    default:
      throw failedPrecondition(
        `${g.at('type')}: must be box, sphere or capsule (got ${JSON.stringify(type)})`,
      );
  }
}
