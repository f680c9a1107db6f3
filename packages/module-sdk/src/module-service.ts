/**
 * `viam.module.v1.ModuleService` as a module serves it (machine-runtime.md A3.4, appendix §2):
 * Ready connects back to the parent and answers the handler map; AddResource / ReconfigureResource /
 * RemoveResource manage the module's resources; ValidateConfig runs the model's validator.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from '@connectrpc/connect';
import { modulePb, type robotPb } from '@mcloud/protocol/machine';
import type { ApiDefinition } from './api-definition.ts';
import { errorMessage, ModuleError, toConnectError } from './errors.ts';
import type { Logger, LogLevel } from './logger.ts';
import { createLogger, type LogSink } from './logger.ts';
import type { ModelDefinition } from './model.ts';
import type { ParentClient } from './parent-client.ts';
import { registerReflection } from './reflection.ts';
import type { Dependencies, Resource, ResourceConfig } from './resource.ts';
import { resourceConfigFromProto } from './resource-config.ts';
import {
  type Api,
  apiEquals,
  formatApi,
  formatResourceName,
  parseResourceName,
  type ResourceName,
} from './resource-name.ts';

/** Names the parent may return from ValidateConfig that mean the frame system; never dependencies. */
const frameSystemNames = new Set(['framesystem', '$framesystem', 'rdk:service:frame_system/builtin']);

export interface ModuleServiceOptions {
  readonly moduleName: string;
  readonly models: readonly ModelDefinition[];
  /** APIs whose clients dependencies may use (the models' APIs are added). */
  readonly apis: readonly ApiDefinition[];
  readonly logLevel: LogLevel;
  readonly logSink: () => LogSink;
  /** Connects to the parent (once); undefined when the module runs without a parent. */
  connectParent(address: string, signal: AbortSignal): Promise<ParentClient | undefined>;
  readonly logger: Logger;
}

interface HostedResource {
  readonly resource: Resource;
  readonly config: ResourceConfig;
}

export interface ModuleResources {
  /** Closes every resource (module shutdown), each bounded by `signal`. */
  closeAll(signal: AbortSignal): Promise<void>;
  readonly size: number;
}

export function registerModuleService(router: ConnectRouter, options: ModuleServiceOptions): ModuleResources {
  const hosted = new Map<string, HostedResource>();
  const apis = uniqueApis([...options.models.map((model) => model.api), ...options.apis]);
  const findModel = (config: ResourceConfig): ModelDefinition => {
    const model = options.models.find((m) => apiEquals(m.api.api, config.api) && m.model === config.model);
    if (!model) {
      throw new ModuleError(
        'NotFound',
        `config.model: ${config.model} of API ${formatApi(config.api)} is not served by module ${options.moduleName}`,
      );
    }
    return model;
  };
  let parent: ParentClient | undefined;

  const resolveDependencies = async (
    names: readonly string[],
    signal: AbortSignal,
  ): Promise<Dependencies> => {
    const all = new Map<string, Resource>();
    let parentNames: ResourceName[] | undefined;
    for (const [index, text] of names.entries()) {
      const name = parseResourceName(text, `dependencies[${index}]`);
      const key = formatResourceName(name);
      const local = hosted.get(key);
      if (local) {
        all.set(key, local.resource);
        continue;
      }
      if (!parent) {
        throw new ModuleError(
          'FailedPrecondition',
          `dependencies[${index}]: ${key} is not in this module and there is no parent connection`,
        );
      }
      parentNames ??= await parent.resourceNames(signal);
      if (!parentNames.some((candidate) => formatResourceName(candidate) === key)) {
        throw new ModuleError('NotFound', `dependencies[${index}]: ${key} not found on the parent`);
      }
      const definition = apis.find((api) => apiEquals(api.api, name.api));
      if (!definition) {
        throw new ModuleError(
          'FailedPrecondition',
          `dependencies[${index}]: no client for API ${formatApi(name.api)} in this module`,
        );
      }
      all.set(key, definition.client(name, parent.transport));
    }
    return createDependencies(all);
  };

  const build = async (
    request: { config?: robotPb.ComponentConfig; dependencies: string[] },
    context: HandlerContext,
  ): Promise<HostedResource> => {
    const config = resourceConfigFromProto(request.config);
    const model = findModel(config);
    const dependencies = await resolveDependencies(request.dependencies, context.signal);
    const fullName = `${formatApi(config.api)}/${config.name}`;
    const level = config.logLevel === 'debug' ? 'debug' : options.logLevel;
    const logger = createLogger(`${options.moduleName}.${fullName}`, level, options.logSink);
    const resource = await model.create({ config, dependencies, logger, signal: context.signal });
    if (context.signal.aborted) {
      await resource.close(AbortSignal.timeout(30_000)).catch(() => {});
      throw new ConnectError(
        `AddResource ${fullName}: deadline passed while constructing`,
        Code.DeadlineExceeded,
      );
    }
    return { resource, config };
  };

  const closeHosted = async (key: string, entry: HostedResource) => {
    hosted.delete(key);
    try {
      await entry.resource.close(AbortSignal.timeout(30_000));
    } catch (error) {
      options.logger.warn(`closing ${key} failed`, { error: errorMessage(error) });
    }
  };

  const guarded =
    <I, O>(handler: (request: I, context: HandlerContext) => Promise<O>) =>
    async (request: I, context: HandlerContext): Promise<O> => {
      try {
        return await handler(request, context);
      } catch (error) {
        throw toConnectError(error);
      }
    };

  router.service(modulePb.ModuleService, {
    ready: guarded(async (request, context) => {
      const address = request.rawParentAddress || request.parentAddress;
      if (!parent && address) parent = await options.connectParent(address, context.signal);
      return {
        ready: true,
        handlermap: { handlers: handlerMap(options.models) },
        webrtcAnswer: '',
      };
    }),
    addResource: guarded(async (request, context) => {
      const config = resourceConfigFromProto(request.config);
      const key = `${formatApi(config.api)}/${config.name}`;
      if (hosted.has(key))
        throw new ModuleError('AlreadyExists', `config.name: ${key} already exists in this module`);
      const entry = await build(request, context);
      hosted.set(key, entry);
      options.logger.debug('resource added', { name: key, model: config.model });
      return {};
    }),
    reconfigureResource: guarded(async (request, context) => {
      const config = resourceConfigFromProto(request.config);
      const key = `${formatApi(config.api)}/${config.name}`;
      const existing = hosted.get(key);
      if (existing) await closeHosted(key, existing);
      hosted.set(key, await build(request, context));
      return {};
    }),
    removeResource: guarded(async (request) => {
      const key = formatResourceName(parseResourceName(request.name, 'name'));
      const existing = hosted.get(key);
      if (!existing) throw new ModuleError('NotFound', `name: resource ${key} is not in this module`);
      await closeHosted(key, existing);
      options.logger.debug('resource removed', { name: key });
      return {};
    }),
    validateConfig: guarded(async (request) => {
      const config = resourceConfigFromProto(request.config);
      const model = findModel(config);
      const result = model.validate ? await model.validate(config) : {};
      const clean = (names: readonly string[] | undefined) =>
        (names ?? []).filter((n) => !frameSystemNames.has(n));
      return {
        dependencies: clean(result.dependencies),
        optionalDependencies: clean(result.optionalDependencies),
      };
    }),
  });

  const servedApis = uniqueApis(options.models.map((model) => model.api));
  registerReflection(router, [modulePb.ModuleService, ...servedApis.map((definition) => definition.service)]);
  for (const definition of servedApis) {
    definition.serve(router, (name) => {
      const entry = hosted.get(`${formatApi(definition.api)}/${name}`);
      if (!entry)
        throw new ConnectError(`resource ${formatApi(definition.api)}/${name} not found`, Code.NotFound);
      return entry.resource;
    });
  }

  return {
    get size() {
      return hosted.size;
    },
    async closeAll(signal) {
      await Promise.all(
        [...hosted.entries()].map(async ([key, entry]) => {
          if (signal.aborted) return;
          await closeHosted(key, entry);
        }),
      );
    },
  };
}

function handlerMap(
  models: readonly ModelDefinition[],
): MessageInitShape<typeof modulePb.HandlerDefinitionSchema>[] {
  const byApi = new Map<string, { api: Api; service: string; models: string[] }>();
  for (const model of models) {
    const key = formatApi(model.api.api);
    const entry = byApi.get(key) ?? { api: model.api.api, service: model.api.service.typeName, models: [] };
    entry.models.push(model.model);
    byApi.set(key, entry);
  }
  return [...byApi.values()].map((entry) => ({
    subtype: { subtype: { ...entry.api, name: '' }, protoService: entry.service },
    models: entry.models,
  }));
}

function uniqueApis(definitions: readonly ApiDefinition[]): ApiDefinition[] {
  const seen = new Map<string, ApiDefinition>();
  for (const definition of definitions)
    seen.set(formatApi(definition.api), seen.get(formatApi(definition.api)) ?? definition);
  return [...seen.values()];
}

function createDependencies(all: Map<string, Resource>): Dependencies {
  return {
    all,
    get<T extends Resource>(api: Api, name: string): T {
      const found = all.get(`${formatApi(api)}/${name}`);
      if (!found) throw new ModuleError('NotFound', `dependency ${formatApi(api)}/${name} not found`);
      return found as T;
    },
  };
}
