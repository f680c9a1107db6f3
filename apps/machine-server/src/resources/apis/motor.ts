/** `rdk:component:motor` — viam.component.motor.v1.MotorService. */
import type { Actuator, CallOptions, Resource } from '../resource.ts';
import { apiEquals, componentApi } from '../resource-name.ts';

export const motorApi = componentApi('motor');

export interface Motor extends Actuator {
  /** `SetPower`: power in [-1, 1]. */
  setPower(powerPct: number, options: CallOptions): Promise<void>;
  /** `GoFor`: `revolutions` at `rpm` (0 revolutions = spin until stopped). Resolves when done. */
  goFor(rpm: number, revolutions: number, options: CallOptions): Promise<void>;
  /** `GoTo`: to absolute `positionRevolutions` at `rpm`. Resolves when there. */
  goTo(rpm: number, positionRevolutions: number, options: CallOptions): Promise<void>;
  /** `SetRPM`: spin at `rpm` indefinitely. */
  setRpm(rpm: number, options: CallOptions): Promise<void>;
  /** `ResetZeroPosition`: the current position becomes `offset`. */
  resetZeroPosition(offset: number, options: CallOptions): Promise<void>;
  /** `GetPosition` in revolutions. */
  getPosition(options: CallOptions): Promise<number>;
  /** `GetProperties`. */
  getProperties(options: CallOptions): Promise<{ positionReporting: boolean }>;
  /** `IsPowered`: on/off and power in [-1, 1]. */
  isPowered(options: CallOptions): Promise<{ isOn: boolean; powerPct: number }>;
}

export function isMotor(resource: Resource): resource is Motor {
  return apiEquals(resource.name.api, motorApi);
}
