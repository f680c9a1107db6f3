/**
 * The parts that plug into every `machine-server` process. Each engineer adds its factory here:
 * - ms-api: the machine API web server (gRPC/gRPC-web on network.bind_address, auth, mDNS,
 *   /restart_status via `host.restartStatus`, -webprofile, -shareddir, -no-tls, -disable-mdns);
 * - ms-data: the data manager (`registerModels` for rdk:service:data_manager, capture + sync);
 * - ms-modules: `moduleReconciler` (modules are part of the reconfigure pass, see ModuleReconciler);
 * - ms-logging: `logging` (replaces the default console logging; honours -log-file).
 */
import { createMachineApi } from './api/machine-api.ts';
import { createDataManagerExtension } from './data/data-manager-model.ts';
import { createDiagnosticsExtension } from './diagnostics/diagnostics-extension.ts';
import { createMachineLogging } from './logging/machine-logging.ts';
import type {
  MachineExtension,
  MachineLogging,
  MachineServerOptions,
  ModuleReconciler,
} from './machine-host.ts';
import { createModulesPart } from './modules/modules-part.ts';

export interface DefaultParts {
  readonly logging: MachineLogging;
  readonly extensions: MachineExtension[];
  readonly moduleReconciler?: ModuleReconciler;
}

export function createDefaultParts(options: Omit<MachineServerOptions, 'configPath'>): DefaultParts {
  const extensions: MachineExtension[] = [];
  extensions.push(createDiagnosticsExtension(() => extensions));
  extensions.push(createDataManagerExtension());
  // ms-modules: the module parent server starts with the extensions; modules join every reconfigure pass.
  const modules = createModulesPart(options);
  extensions.push(modules.extension);
  // The machine API stays last: extensions stop in reverse order, so it stops accepting calls first.
  extensions.push(
    createMachineApi({ moduleServerTcpAddress: () => modules.manager()?.parentTcpAddress() ?? '' }),
  );
  return {
    logging: createMachineLogging({ server: options }),
    extensions,
    moduleReconciler: modules.reconciler,
  };
}
