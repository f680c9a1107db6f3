/** Registers every built-in model of this package (the data manager registers itself from src/data/). */
import type { Clock } from '../clock.ts';
import type { ModelRegistry } from '../resources/model-registry.ts';
import { createFakeCameraRegistration } from './fake-camera.ts';
import { fakeGenericComponentRegistration, fakeGenericServiceRegistration } from './fake-generic.ts';
import { createFakeMotorRegistration } from './fake-motor.ts';
import { fakeSensorRegistration } from './fake-sensor.ts';
import { createHostSensorRegistration } from './host-sensor.ts';

export function registerBuiltinModels(registry: ModelRegistry, clock: Clock): void {
  registry.register(fakeSensorRegistration);
  registry.register(createHostSensorRegistration());
  registry.register(createFakeCameraRegistration(clock));
  registry.register(createFakeMotorRegistration(clock));
  registry.register(fakeGenericComponentRegistration);
  registry.register(fakeGenericServiceRegistration);
}
