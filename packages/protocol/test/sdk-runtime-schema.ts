/**
 * Collects the protobuf-es v1 runtime schema (message classes, enum types, service objects)
 * that the pinned @viamrobotics/sdk actually ships, so tests can compare it with ours.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as sdk from '@viamrobotics/sdk';

export interface V1FieldInfo {
  no: number;
  name: string;
  jsonName: string;
  kind: 'scalar' | 'enum' | 'message' | 'map';
  T: unknown;
  K?: number;
  V?: { kind: 'scalar' | 'enum' | 'message'; T: unknown };
  L?: number;
  repeated: boolean;
  packed: boolean;
  opt: boolean;
  oneof?: { name: string };
}

export interface V1MessageType {
  typeName: string;
  fields: { list(): readonly V1FieldInfo[] };
}

export interface V1EnumType {
  typeName: string;
  values: readonly { no: number; name: string }[];
}

export interface V1MethodInfo {
  name: string;
  I: V1MessageType;
  O: V1MessageType;
  kind: number;
}

export interface V1ServiceType {
  typeName: string;
  methods: Record<string, V1MethodInfo>;
}

export interface SdkRuntimeSchema {
  messages: Map<string, V1MessageType>;
  enums: Map<string, V1EnumType>;
  services: Map<string, V1ServiceType>;
  /** `*Api` namespace name -> type names of the messages, enums and services it exports */
  namespaces: Map<string, string[]>;
}

function isMessageType(value: unknown): value is V1MessageType {
  return (
    typeof value === 'function' &&
    typeof (value as Partial<V1MessageType>).typeName === 'string' &&
    typeof (value as Partial<V1MessageType>).fields?.list === 'function'
  );
}

function isServiceType(value: unknown): value is V1ServiceType {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Partial<V1ServiceType>).typeName === 'string' &&
    typeof (value as Partial<V1ServiceType>).methods === 'object'
  );
}

/** v1 stores an enum's EnumType under a private symbol on the TypeScript enum object. */
function enumTypeOf(value: unknown): V1EnumType | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  for (const symbol of Object.getOwnPropertySymbols(value)) {
    if (symbol.description === '@bufbuild/protobuf/enum-type') {
      return (value as Record<symbol, V1EnumType>)[symbol];
    }
  }
  return undefined;
}

/** Service descriptors are not exported; capture them as the SDK's own clients hand them to a transport. */
async function captureServices(add: (service: V1ServiceType) => void): Promise<void> {
  const capture = (service: V1ServiceType): never => {
    add(service);
    throw new Error('captured');
  };
  const transport = { unary: capture, stream: capture };
  const fakeRobot = {
    createServiceClient: (service: V1ServiceType) => {
      add(service);
      return {};
    },
  };

  // App-side clients: ViamClient builds one Connect client per service on the given transport.
  const viamClient = await sdk.createViamClient({
    serviceHost: 'http://127.0.0.1:9',
    credentials: { type: 'access-token', payload: 'unused' },
  });
  const ViamClient = viamClient.constructor as new (transport: unknown, credentials: unknown) => object;
  const clientSets = Object.values(new ViamClient(transport, undefined)).filter((v) => typeof v === 'object');
  for (const clientSet of clientSets) {
    for (const client of Object.values(clientSet as object)) {
      const method = Object.values((client ?? {}) as object).find((v) => typeof v === 'function');
      if (typeof method !== 'function') continue;
      try {
        const result = method({});
        if (result instanceof Promise) await result.catch(() => undefined);
        else if (result && Symbol.asyncIterator in result) {
          await result[Symbol.asyncIterator]()
            .next()
            .catch(() => undefined);
        }
      } catch {
        // the transport threw after recording the service
      }
    }
  }

  // Machine-side clients: RobotClient getters and the exported resource clients.
  const robotPrototype: object = sdk.RobotClient.prototype;
  const robotLike = Object.create(robotPrototype, {
    createServiceClient: { value: fakeRobot.createServiceClient },
  });
  for (const [name, descriptor] of Object.entries(Object.getOwnPropertyDescriptors(robotPrototype))) {
    if (!descriptor.get || !name.endsWith('Service')) continue;
    try {
      Reflect.get(robotPrototype, name, robotLike);
    } catch {
      // e.g. robotService needs a live connection
    }
  }
  for (const [name, value] of Object.entries(sdk)) {
    if (!name.endsWith('Client') || typeof value !== 'function' || name === 'RobotClient') continue;
    try {
      new (value as new (robot: unknown, name: string) => unknown)(fakeRobot, 'resource');
    } catch {
      // not a resource client
    }
  }
}

/**
 * The SDK bundle builds every message, enum and service it uses as a module-level binding but
 * exports only some. A copy of the bundle that also exports those bindings reaches the rest
 * (e.g. the auth, signaling and viam.robot.v1 services the dialer uses internally).
 */
async function loadBundleBindings(): Promise<unknown[]> {
  const bundlePath = fileURLToPath(import.meta.resolve('@viamrobotics/sdk'));
  const source = await readFile(bundlePath, 'utf8');
  const bindings = new Set<string>();
  const patterns = [
    /([\w$]+) = (?:\/\* @__PURE__ \*\/ )?[\w$]+\.(?:makeMessageType|makeEnum)\(/g,
    /([\w$]+) = \{\n\s+typeName: "/g,
    /\.util\.setEnumType\(([\w$]+),/g,
  ];
  for (const pattern of patterns) {
    for (const match of source.matchAll(pattern)) if (match[1]) bindings.add(match[1]);
  }
  const exportList = [...bindings].map((name, i) => `${name} as __binding${i}`).join(', ');
  const dir = await mkdtemp(join(tmpdir(), 'mcloud-sdk-bundle-'));
  try {
    const copy = join(dir, 'bundle.mjs');
    await writeFile(copy, `${source}\nexport { ${exportList} };\n`);
    const module: Record<string, unknown> = await import(pathToFileURL(copy).href);
    return Object.entries(module)
      .filter(([name]) => name.startsWith('__binding'))
      .map(([, value]) => value);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function loadSdkRuntimeSchema(): Promise<SdkRuntimeSchema> {
  const schema: SdkRuntimeSchema = {
    messages: new Map(),
    enums: new Map(),
    services: new Map(),
    namespaces: new Map(),
  };
  const visit = (value: unknown): string | undefined => {
    if (isMessageType(value)) {
      if (schema.messages.has(value.typeName)) return value.typeName;
      schema.messages.set(value.typeName, value);
      for (const field of value.fields.list()) {
        visit(field.T);
        visit(field.V?.T);
      }
      return value.typeName;
    }
    if (isServiceType(value)) {
      if (schema.services.has(value.typeName)) return value.typeName;
      schema.services.set(value.typeName, value);
      for (const method of Object.values(value.methods)) {
        visit(method.I);
        visit(method.O);
      }
      return value.typeName;
    }
    const enumType = enumTypeOf(value) ?? (isEnumType(value) ? value : undefined);
    if (enumType) {
      schema.enums.set(enumType.typeName, enumType);
      return enumType.typeName;
    }
    return undefined;
  };

  for (const [name, value] of Object.entries(sdk)) {
    if (name.endsWith('Api') && typeof value === 'object') {
      const typeNames: string[] = [];
      for (const member of Object.values(value)) {
        const typeName = visit(member);
        if (typeName) typeNames.push(typeName);
      }
      schema.namespaces.set(name, typeNames);
    } else {
      visit(value);
    }
  }
  await captureServices((service) => visit(service));
  for (const value of await loadBundleBindings()) {
    // protobuf-es v1's own copy of descriptor.proto is older than v2's; the well-known types
    // Viam uses are still compared, reached through the fields that reference them.
    const typeName = (value as { typeName?: string }).typeName ?? enumTypeOf(value)?.typeName;
    if (!typeName?.startsWith('google.protobuf.')) visit(value);
  }
  return schema;
}

function isEnumType(value: unknown): value is V1EnumType {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Partial<V1EnumType>).typeName === 'string' &&
    Array.isArray((value as Partial<V1EnumType>).values)
  );
}
