/**
 * The counter-sensor example as a real process, driven by a hand-made parent: Ready (connects back),
 * ValidateConfig (implicit deps), AddResource with a dependency served by the parent, readings,
 * DoCommand logs arriving through RobotService.Log, RemoveResource, SIGTERM exit.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fromBinary, fromJson } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, ValueSchema } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import {
  createSocketTransport,
  type SocketServer,
  startSocketServer,
  valueMapToJson,
} from '@mcloud/module-sdk';
import { machineRobotPb, modulePb, reflectionV1alphaPb, sensorPb } from '@mcloud/protocol';

const executable = join(import.meta.dirname, '..', 'examples', 'counter-sensor', 'counter-sensor');

let dir: string;
let parent: SocketServer;
let child: ChildProcess;
const logs: { level: string; loggerName: string; message: string; modname: string | null }[] = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'module-sdk-test-'));
  parent = await startSocketServer({
    address: join(dir, 'parent.sock'),
    routes(router) {
      router.service(machineRobotPb.RobotService, {
        resourceNames: () => ({
          resources: [{ namespace: 'rdk', type: 'component', subtype: 'sensor', name: 'base' }],
        }),
        log(request, context) {
          if (request.logs.length !== 1) throw new ConnectError('exactly one entry', Code.InvalidArgument);
          const [entry] = request.logs;
          if (entry) {
            const { level, loggerName, message } = entry;
            logs.push({ level, loggerName, message, modname: context.requestHeader.get('modname') });
          }
          return {};
        },
      });
      router.service(sensorPb.SensorService, {
        getReadings: (request) => {
          if (request.name !== 'base') throw new ConnectError(`no sensor ${request.name}`, Code.NotFound);
          return { readings: { celsius: fromJson(ValueSchema, 21.5) } };
        },
      });
    },
  });
});

after(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await parent?.close();
  await rm(dir, { recursive: true, force: true });
});

/**
 * The socket file appears at bind(), a moment before listen(): a connection in between is refused
 * (ECONNREFUSED, Unavailable), so the first call is retried briefly.
 */
async function untilListening<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof ConnectError && error.code === Code.Unavailable) || attempt >= 50) throw error;
      await sleep(100);
    }
  }
}

test('the example module serves a counter that reads its dependency through the parent', async () => {
  const socket = join(dir, 'counter.sock');
  child = spawn(executable, [socket, '--log-level=debug'], {
    env: { ...process.env, VIAM_MODULE_NAME: 'counter', VIAM_MODULE_ADDRESS: socket },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Generous: a cold Node start with type stripping takes seconds on a loaded 2-core machine.
  for (let i = 0; i < 400 && !existsSync(socket); i++) await sleep(100);
  assert.ok(existsSync(socket), 'module socket appears');

  const connection = createSocketTransport(socket);
  const module = createClient(modulePb.ModuleService, connection.transport);
  const ready = await untilListening(() =>
    module.ready({ parentAddress: join(dir, 'parent.sock'), rawParentAddress: join(dir, 'parent.sock') }),
  );
  assert.equal(ready.ready, true);
  assert.deepEqual(
    ready.handlermap?.handlers.map((h) => [h.subtype?.subtype?.subtype, h.subtype?.protoService, h.models]),
    [['sensor', 'viam.component.sensor.v1.SensorService', ['mcloud:example:counter']]],
  );

  // A Go parent looks the services up by reflection (v1alpha) and needs their files.
  const reflection = createClient(reflectionV1alphaPb.ServerReflection, connection.transport);
  const files: string[] = [];
  let services: string[] = [];
  for await (const response of reflection.serverReflectionInfo(
    (async function* () {
      yield { messageRequest: { case: 'listServices' as const, value: '' } };
      yield {
        messageRequest: {
          case: 'fileContainingSymbol' as const,
          value: 'viam.component.sensor.v1.SensorService',
        },
      };
    })(),
  )) {
    const answer = response.messageResponse;
    if (answer.case === 'listServicesResponse') services = answer.value.service.map((s) => s.name);
    if (answer.case === 'fileDescriptorResponse') {
      for (const bytes of answer.value.fileDescriptorProto)
        files.push(fromBinary(FileDescriptorProtoSchema, bytes).name);
    }
  }
  assert.deepEqual(services, ['viam.module.v1.ModuleService', 'viam.component.sensor.v1.SensorService']);
  assert.equal(files[0], 'component/sensor/v1/sensor.proto');
  assert.ok(
    files.includes('common/v1/common.proto') && files.includes('google/protobuf/struct.proto'),
    files.join(),
  );

  const config = {
    name: 'c1',
    api: 'rdk:component:sensor',
    model: 'mcloud:example:counter',
    attributes: { step: 2, source: 'base' },
  };
  const validated = await module.validateConfig({ config });
  assert.deepEqual(validated.dependencies, ['base']);
  await assert.rejects(
    module.validateConfig({ config: { ...config, attributes: { step: 'x' } } }),
    (error: ConnectError) => error.code === Code.InvalidArgument && /attributes\.step/.test(error.rawMessage),
  );

  await module.addResource({ config, dependencies: ['rdk:component:sensor/base'] });
  const sensor = createClient(sensorPb.SensorService, connection.transport);
  const first = valueMapToJson((await sensor.getReadings({ name: 'c1' })).readings);
  const second = valueMapToJson((await sensor.getReadings({ name: 'c1' })).readings);
  assert.deepEqual(first, { count: 2, step: 2, source: { celsius: 21.5 } });
  assert.equal(second.count, 4);

  // ReconfigureResource (older parents): closed and built again with the new config.
  await module.reconfigureResource({ config: { ...config, attributes: { step: 10 } }, dependencies: [] });
  assert.deepEqual(valueMapToJson((await sensor.getReadings({ name: 'c1' })).readings), {
    count: 10,
    step: 10,
  });
  await module.reconfigureResource({ config, dependencies: ['rdk:component:sensor/base'] });
  await sensor.doCommand({ name: 'c1', command: { log: { level: 'warn', message: 'hello parent' } } });
  await assert.rejects(
    module.addResource({ config: { ...config, name: 'c2' }, dependencies: ['rdk:component:sensor/missing'] }),
    (error: ConnectError) => error.code === Code.NotFound,
  );
  await module.removeResource({ name: 'rdk:component:sensor/c1' });
  await assert.rejects(
    sensor.getReadings({ name: 'c1' }),
    (error: ConnectError) => error.code === Code.NotFound,
  );

  for (let i = 0; i < 50 && !logs.some((l) => l.message === 'hello parent'); i++) await sleep(50);
  const hello = logs.find((l) => l.message === 'hello parent');
  assert.deepEqual(hello && { ...hello }, {
    level: 'warn',
    loggerName: 'counter.rdk:component:sensor/c1',
    message: 'hello parent',
    modname: 'counter',
  });
  assert.ok(
    logs.some((l) => l.level === 'debug' && l.message === 'reading'),
    'debug logs are sent at --log-level=debug',
  );

  connection.close();
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.equal(existsSync(socket), false, 'socket removed on exit');
});
