/**
 * `rdk:component:motor` model `fake`: a simulated motor that reports position from elapsed time.
 * Attributes: `max_rpm` (default 100). GoFor/GoTo resolve when the simulated move finishes.
 */
import type { Clock } from '../clock.ts';
import { systemClock } from '../clock.ts';
import { sleep } from '../concurrency.ts';
import { invalidConfig, MachineError } from '../errors.ts';
import type { JsonObject } from '../json.ts';
import { type Motor, motorApi } from '../resources/apis/motor.ts';
import type { ModelRegistration } from '../resources/model-registry.ts';
import type { CallOptions } from '../resources/resource.ts';
import { builtinModel } from '../resources/resource-name.ts';
import { numberAttribute, rejectUnknownAttributes } from './attributes.ts';
import { fakeBehaviour, fakeBehaviourKeys, fakeBehaviourSchema } from './fake-behaviour.ts';

const keys = ['max_rpm', ...fakeBehaviourKeys];

export function createFakeMotorRegistration(clock: Clock = systemClock): ModelRegistration {
  return {
    api: motorApi,
    model: builtinModel('fake'),
    source: 'builtin',
    attributeSchema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        max_rpm: { type: 'number', exclusiveMinimum: 0, maximum: 100000, default: 100 },
        ...fakeBehaviourSchema,
      },
    },
    validate(config) {
      rejectUnknownAttributes(config, keys);
      numberAttribute(config, 'max_rpm', { min: 0.001, max: 100_000, fallback: 100 });
      fakeBehaviour(config);
      return { requiredDeps: [], optionalDeps: [] };
    },
    async build({ config, signal }) {
      const behaviour = fakeBehaviour(config);
      await behaviour.beforeBuild(signal);
      const maxRpm = numberAttribute(config, 'max_rpm', { min: 0.001, max: 100_000, fallback: 100 });
      return createFakeMotor(config.resourceName, maxRpm, clock, behaviour.onClose);
    },
  };
}

function createFakeMotor(
  name: Motor['name'],
  maxRpm: number,
  clock: Clock,
  onClose: () => Promise<void>,
): Motor {
  let position = 0;
  let rpm = 0;
  let since = clock.now().getTime();
  let target: number | undefined;
  let move: AbortController | undefined;

  const currentPosition = () => {
    const minutes = (clock.now().getTime() - since) / 60_000;
    let value = position + rpm * minutes;
    if (target !== undefined && (rpm > 0 ? value >= target : value <= target)) value = target;
    return value;
  };
  const settle = (newRpm: number, newTarget?: number) => {
    position = currentPosition();
    since = clock.now().getTime();
    rpm = newRpm;
    target = newTarget;
  };
  const checkRpm = (value: number, field: string) => {
    if (!Number.isFinite(value)) throw invalidConfig(field, 'must be a finite number', value);
    if (Math.abs(value) > maxRpm)
      throw invalidConfig(field, `must be at most max_rpm ${maxRpm} in magnitude`, value);
  };
  const runTo = async (goal: number, speed: number, options: CallOptions) => {
    move?.abort();
    const controller = new AbortController();
    move = controller;
    const distance = goal - currentPosition();
    if (distance === 0 || speed === 0) return;
    const signedRpm = Math.sign(distance) * Math.abs(speed);
    settle(signedRpm, goal);
    await sleep(
      (Math.abs(distance) / Math.abs(speed)) * 60_000,
      AbortSignal.any([options.signal, controller.signal]),
    );
    if (move === controller) {
      settle(0);
      move = undefined;
    }
  };

  return {
    name,
    async setPower(powerPct) {
      if (!Number.isFinite(powerPct) || powerPct < -1 || powerPct > 1) {
        throw invalidConfig('power_pct', 'must be between -1 and 1', powerPct);
      }
      move?.abort();
      settle(powerPct * maxRpm);
    },
    async goFor(speed, revolutions, options) {
      checkRpm(speed, 'rpm');
      if (revolutions === 0) {
        move?.abort();
        settle(speed);
        return;
      }
      const direction = Math.sign(speed) * Math.sign(revolutions);
      await runTo(currentPosition() + direction * Math.abs(revolutions), speed, options);
    },
    async goTo(speed, positionRevolutions, options) {
      checkRpm(speed, 'rpm');
      await runTo(positionRevolutions, speed, options);
    },
    async setRpm(speed) {
      checkRpm(speed, 'rpm');
      move?.abort();
      settle(speed);
    },
    async resetZeroPosition(offset) {
      settle(rpm, target === undefined ? undefined : target - currentPosition() - offset);
      position = -offset;
    },
    getPosition: async () => currentPosition(),
    getProperties: async () => ({ positionReporting: true }),
    async isPowered() {
      const current = rpm === 0 || (target !== undefined && currentPosition() === target) ? 0 : rpm;
      return { isOn: current !== 0, powerPct: current / maxRpm };
    },
    isMoving: async () => rpm !== 0 && !(target !== undefined && currentPosition() === target),
    async stop() {
      move?.abort();
      settle(0);
    },
    async doCommand(command: JsonObject) {
      throw new MachineError(
        'Unimplemented',
        `fake motor has no commands (got ${Object.keys(command).join(', ') || 'none'})`,
      );
    },
    async close() {
      move?.abort();
      settle(0);
      await onClose();
    },
  };
}
