import type { ConnectRouter } from '@connectrpc/connect';
import {
  agentPb,
  appPb,
  authPb,
  billingPb,
  buildPb,
  dataPb,
  dataPipelinesPb,
  datasetPb,
  endUserPb,
  machineConnectionPb,
  mlTrainingPb,
  packagesPb,
  robotPb,
  triggerDeliveriesPb,
} from '@mcloud/protocol';
import type { CloudDeps } from '../cloud-deps.ts';
import { appServiceHandlers } from './app/app-service.ts';
import { authServiceHandlers } from './auth/auth-service.ts';
import { dataServiceHandlers } from './data/data-service.ts';
import { dataPipelinesServiceHandlers } from './data-pipelines/data-pipelines-service.ts';
import { dataSyncServiceHandlers } from './data-sync/data-sync-service.ts';
import { dataSyncServiceWithRawUpload } from './data-sync/raw-data-capture-upload.ts';
import { datasetServiceHandlers } from './dataset/dataset-service.ts';
import { machineConnectionHandlers } from './robot/machine-connection-service.ts';
import { robotServiceHandlers } from './robot/robot-service.ts';
import { triggerDeliveryServiceHandlers } from './triggers/trigger-delivery-service.ts';

/**
 * Every service of the published API is registered, so an RPC we do not implement answers
 * `Unimplemented` (Connect fills in missing methods) instead of a transport-level 404.
 */
export function registerRoutes(router: ConnectRouter, deps: CloudDeps): void {
  router.service(authPb.AuthService, authServiceHandlers(deps.authenticator));
  router.service(appPb.AppService, appServiceHandlers(deps));
  router.service(robotPb.RobotService, robotServiceHandlers(deps));
  router.service(machineConnectionPb.MachineConnectionService, machineConnectionHandlers(deps));
  router.service(dataPb.DataService, dataServiceHandlers(deps));
  router.service(dataSyncServiceWithRawUpload, dataSyncServiceHandlers(deps));
  router.service(datasetPb.DatasetService, datasetServiceHandlers(deps));
  router.service(dataPipelinesPb.DataPipelinesService, dataPipelinesServiceHandlers(deps));
  router.service(triggerDeliveriesPb.TriggerDeliveryService, triggerDeliveryServiceHandlers(deps));
  router.service(mlTrainingPb.MLTrainingService, {});
  router.service(packagesPb.PackageService, {});
  router.service(agentPb.AgentDeviceService, {});
  router.service(billingPb.BillingService, {});
  router.service(endUserPb.EndUserService, {});
  router.service(buildPb.BuildService, {});
}
