import type { ConnectRouter } from '@connectrpc/connect';
import {
  cameraPb,
  dataManagerPb,
  genericPb,
  genericServicePb,
  motorPb,
  sensorPb,
} from '@mcloud/protocol/machine';
import { dataManagerHandlers } from '../../data/data-manager-service.ts';
import { cameraHandlers } from './camera-service.ts';
import { genericComponentHandlers, genericServiceHandlers } from './generic-service.ts';
import { motorHandlers } from './motor-service.ts';
import { createResourceCalls, type ResourceResolver } from './resource-calls.ts';
import { sensorHandlers } from './sensor-service.ts';

/**
 * Registers the component and service APIs of the built-in models on `router`, resolving resources
 * through `resolve`. Used by the machine API and by the parent server modules dial (ms-modules).
 * Methods without a handler (e.g. GetGeometries, GetPointCloud) answer Unimplemented.
 */
export function registerComponentServices(router: ConnectRouter, resolve: ResourceResolver): void {
  const calls = createResourceCalls(resolve);
  router.service(sensorPb.SensorService, sensorHandlers(calls));
  router.service(cameraPb.CameraService, cameraHandlers(calls));
  router.service(motorPb.MotorService, motorHandlers(calls));
  router.service(genericPb.GenericService, genericComponentHandlers(calls));
  router.service(genericServicePb.GenericService, genericServiceHandlers(calls));
  router.service(dataManagerPb.DataManagerService, dataManagerHandlers(calls));
}
