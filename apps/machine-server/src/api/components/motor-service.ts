import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { motorPb } from '@mcloud/protocol/machine';
import type { JsonObject } from '../../json.ts';
import { isMotor, type Motor, motorApi } from '../../resources/apis/motor.ts';
import type { CallOptions } from '../../resources/resource.ts';
import { doCommandHandler, type ResourceCalls } from './resource-calls.ts';

/** `viam.component.motor.v1.MotorService`: every method of the Motor interface, DoCommand. */
export function motorHandlers(calls: ResourceCalls): Partial<ServiceImpl<typeof motorPb.MotorService>> {
  const onMotor = <T>(
    request: { name: string; extra?: JsonObject | undefined },
    context: HandlerContext,
    run: (motor: Motor, options: CallOptions) => Promise<T>,
  ) => calls.call(motorApi, isMotor, request.name, request.extra, context, run);
  return {
    async setPower(request, context) {
      await onMotor(request, context, (motor, options) => motor.setPower(request.powerPct, options));
      return {};
    },
    async goFor(request, context) {
      await onMotor(request, context, (motor, options) =>
        motor.goFor(request.rpm, request.revolutions, options),
      );
      return {};
    },
    async goTo(request, context) {
      await onMotor(request, context, (motor, options) =>
        motor.goTo(request.rpm, request.positionRevolutions, options),
      );
      return {};
    },
    async setRPM(request, context) {
      await onMotor(request, context, (motor, options) => motor.setRpm(request.rpm, options));
      return {};
    },
    async resetZeroPosition(request, context) {
      await onMotor(request, context, (motor, options) => motor.resetZeroPosition(request.offset, options));
      return {};
    },
    async getPosition(request, context) {
      return { position: await onMotor(request, context, (motor, options) => motor.getPosition(options)) };
    },
    async getProperties(request, context) {
      return onMotor(request, context, (motor, options) => motor.getProperties(options));
    },
    async stop(request, context) {
      await onMotor(request, context, (motor, options) => motor.stop(options));
      return {};
    },
    async isPowered(request, context) {
      return onMotor(request, context, (motor, options) => motor.isPowered(options));
    },
    async isMoving(request, context) {
      return { isMoving: await onMotor(request, context, (motor, options) => motor.isMoving(options)) };
    },
    doCommand: doCommandHandler(calls, motorApi, isMotor),
  };
}
