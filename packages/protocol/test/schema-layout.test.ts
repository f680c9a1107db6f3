/**
 * The generated schema (protobuf-es v2, from extracted .proto) must have exactly the wire
 * layout of the protobuf-es v1 runtime classes inside the pinned @viamrobotics/sdk.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { DescField, DescFile, Registry } from '@bufbuild/protobuf';
import { createRegistry } from '@bufbuild/protobuf';
import * as wellKnownTypes from '@bufbuild/protobuf/wkt';
import * as protocol from '../src/index.ts';
import { loadSdkRuntimeSchema, type SdkRuntimeSchema, type V1FieldInfo } from './sdk-runtime-schema.ts';

const genDir = join(import.meta.dirname, '..', 'gen');

async function loadGeneratedRegistry(): Promise<{ registry: Registry; files: number }> {
  // google/protobuf/* are not extracted: buf and @bufbuild/protobuf provide them.
  const files: DescFile[] = Object.entries(wellKnownTypes)
    .filter(([name]) => name.startsWith('file_'))
    .map(([, file]) => file as DescFile);
  const generated = files.length;
  const entries = await readdir(genDir, { recursive: true });
  for (const entry of entries.filter((e) => e.endsWith('_pb.js')).sort()) {
    const module: Record<string, unknown> = await import(pathToFileURL(join(genDir, entry)).href);
    for (const [name, value] of Object.entries(module)) {
      if (name.startsWith('file_')) files.push(value as DescFile);
    }
  }
  return { registry: createRegistry(...files), files: files.length - generated };
}

/** v1 MethodKind numbering: Unary, ServerStreaming, ClientStreaming, BiDiStreaming. */
const v1MethodKinds = ['unary', 'server_streaming', 'client_streaming', 'bidi_streaming'];

function typeNameOf(value: unknown): string {
  return (value as { typeName: string }).typeName;
}

/** A field layout in terms both runtimes can express. */
function layoutFromV1(f: V1FieldInfo) {
  const base = {
    no: f.no,
    name: f.name,
    jsonName: f.jsonName,
    kind: f.kind,
    repeated: f.repeated,
    optional: f.opt,
    oneof: f.oneof?.name,
  };
  switch (f.kind) {
    case 'scalar':
      return {
        ...base,
        scalar: f.T as number,
        longAsString: f.L === 1,
        packed: f.repeated ? f.packed : undefined,
      };
    case 'enum':
      return { ...base, type: typeNameOf(f.T), packed: f.repeated ? f.packed : undefined };
    case 'message':
      return { ...base, type: typeNameOf(f.T) };
    case 'map': {
      const value = f.V;
      assert.ok(value, `map field ${f.name} without value info`);
      return {
        ...base,
        mapKey: f.K,
        mapValue:
          value.kind === 'scalar' ? { scalar: value.T } : { kind: value.kind, type: typeNameOf(value.T) },
      };
    }
  }
}

function layoutFromV2(f: DescField) {
  const base = {
    no: f.number,
    name: f.name,
    jsonName: f.jsonName,
    repeated: f.fieldKind === 'list',
    optional: f.proto.proto3Optional === true,
    oneof: f.oneof?.name,
  };
  switch (f.fieldKind) {
    case 'scalar':
      return { ...base, kind: 'scalar', scalar: f.scalar, longAsString: f.longAsString, packed: undefined };
    case 'enum':
      return { ...base, kind: 'enum', type: f.enum.typeName, packed: undefined };
    case 'message':
      return { ...base, kind: 'message', type: f.message.typeName };
    case 'list':
      if (f.listKind === 'scalar') {
        return { ...base, kind: 'scalar', scalar: f.scalar, longAsString: f.longAsString, packed: f.packed };
      }
      if (f.listKind === 'enum') return { ...base, kind: 'enum', type: f.enum.typeName, packed: f.packed };
      return { ...base, kind: 'message', type: f.message.typeName };
    case 'map':
      return {
        ...base,
        kind: 'map',
        mapKey: f.mapKey,
        mapValue:
          f.mapKind === 'scalar'
            ? { scalar: f.scalar }
            : { kind: f.mapKind, type: f.mapKind === 'enum' ? f.enum.typeName : f.message.typeName },
      };
  }
}

let sdkSchema: SdkRuntimeSchema;
let registry: Registry;
let generatedFiles = 0;

before(async () => {
  sdkSchema = await loadSdkRuntimeSchema();
  ({ registry, files: generatedFiles } = await loadGeneratedRegistry());
});

test('the SDK runtime schema is large enough to be meaningful', () => {
  console.log(
    `compared against the SDK: ${sdkSchema.messages.size} messages, ${sdkSchema.enums.size} enums, ` +
      `${sdkSchema.services.size} services (${generatedFiles} generated files)`,
  );
  assert.ok(generatedFiles >= 100, `only ${generatedFiles} generated files`);
  assert.ok(sdkSchema.messages.size >= 600, `only ${sdkSchema.messages.size} messages`);
  assert.ok(sdkSchema.enums.size >= 40, `only ${sdkSchema.enums.size} enums`);
  assert.ok(sdkSchema.services.size >= 30, `only ${sdkSchema.services.size} services`);
  for (const typeName of [
    'viam.app.v1.AppService',
    'viam.app.data.v1.DataService',
    'viam.app.datasync.v1.DataSyncService',
    'viam.app.dataset.v1.DatasetService',
    'viam.app.datapipelines.v1.DataPipelinesService',
    'viam.app.mltraining.v1.MLTrainingService',
    'viam.app.v1.BillingService',
    'viam.provisioning.v1.ProvisioningService',
  ]) {
    assert.ok(sdkSchema.services.has(typeName), `SDK service ${typeName} was not captured`);
  }
});

test('every message, enum and service of every SDK *Api namespace is generated', () => {
  assert.ok(sdkSchema.namespaces.size >= 30, `only ${sdkSchema.namespaces.size} SDK namespaces`);
  const missing: string[] = [];
  for (const [namespace, typeNames] of sdkSchema.namespaces) {
    assert.ok(typeNames.length > 0, `${namespace} exports no protobuf types`);
    for (const typeName of typeNames) {
      if (!registry.get(typeName)) missing.push(`${namespace}: ${typeName}`);
    }
  }
  assert.deepEqual(missing, []);
});

test('messages have exactly the SDK field layouts', () => {
  const problems: string[] = [];
  for (const [typeName, v1] of sdkSchema.messages) {
    const v2 = registry.getMessage(typeName);
    if (!v2) {
      problems.push(`${typeName}: not generated`);
      continue;
    }
    const expected = v1.fields
      .list()
      .map(layoutFromV1)
      .sort((a, b) => a.no - b.no);
    const actual = v2.fields.map(layoutFromV2).sort((a, b) => a.no - b.no);
    try {
      assert.deepEqual(actual, expected);
    } catch (error) {
      problems.push(`${typeName}: ${(error as Error).message}`);
    }
  }
  assert.deepEqual(problems, []);
});

test('enums have exactly the SDK values', () => {
  const problems: string[] = [];
  for (const [typeName, v1] of sdkSchema.enums) {
    const v2 = registry.getEnum(typeName);
    if (!v2) {
      problems.push(`${typeName}: not generated`);
      continue;
    }
    const expected = v1.values.map((v) => [v.name, v.no]);
    const actual = v2.values.map((v) => [v.name, v.number]);
    if (JSON.stringify(actual) !== JSON.stringify(expected)) {
      problems.push(`${typeName}: ${JSON.stringify(actual)} != ${JSON.stringify(expected)}`);
    }
  }
  assert.deepEqual(problems, []);
});

test('services have exactly the SDK methods, kinds and message types', () => {
  const problems: string[] = [];
  for (const [typeName, v1] of sdkSchema.services) {
    const v2 = registry.getService(typeName);
    if (!v2) {
      problems.push(`${typeName}: not generated`);
      continue;
    }
    const expected = Object.values(v1.methods)
      .map((m) => [m.name, v1MethodKinds[m.kind], m.I.typeName, m.O.typeName])
      .sort();
    const actual = v2.methods.map((m) => [m.name, m.methodKind, m.input.typeName, m.output.typeName]).sort();
    try {
      assert.deepEqual(actual, expected);
    } catch (error) {
      problems.push(`${typeName}: ${(error as Error).message}`);
    }
  }
  assert.deepEqual(problems, []);
});

test('the package exports the namespaces other packages code against', () => {
  const expected: Record<string, string> = {
    agentPb: 'app/agent/v1/agent.proto',
    appPb: 'app/v1/app.proto',
    authPb: 'proto/rpc/v1/auth.proto',
    billingPb: 'app/v1/billing.proto',
    buildPb: 'app/build/v1/build.proto',
    commonPb: 'common/v1/common.proto',
    dataManagerPb: 'service/datamanager/v1/data_manager.proto',
    dataPb: 'app/data/v1/data.proto',
    dataPipelinesPb: 'app/datapipelines/v1/data_pipelines.proto',
    datasetPb: 'app/dataset/v1/dataset.proto',
    dataSyncPb: 'app/datasync/v1/data_sync.proto',
    endUserPb: 'app/v1/end_user.proto',
    cameraPb: 'component/camera/v1/camera.proto',
    genericPb: 'component/generic/v1/generic.proto',
    genericServicePb: 'service/generic/v1/generic.proto',
    machineRobotPb: 'robot/v1/robot.proto',
    machineConnectionPb: 'mcloud/machine/v1/machine_connection.proto',
    mlTrainingPb: 'app/mltraining/v1/ml_training.proto',
    modulePb: 'module/v1/module.proto',
    motorPb: 'component/motor/v1/motor.proto',
    packagesPb: 'app/packages/v1/packages.proto',
    provisioningPb: 'provisioning/v1/provisioning.proto',
    rawDataSyncPb: 'mcloud/datasync/v1/raw_data_capture_upload.proto',
    reflectionPb: 'grpc/reflection/v1/reflection.proto',
    reflectionV1alphaPb: 'grpc/reflection/v1alpha/reflection.proto',
    robotPb: 'app/v1/robot.proto',
    sensorPb: 'component/sensor/v1/sensor.proto',
    signalingPb: 'proto/rpc/webrtc/v1/signaling.proto',
    triggerDeliveriesPb: 'mcloud/triggers/v1/trigger_deliveries.proto',
  };
  const actual: Record<string, string> = {};
  for (const [name, namespace] of Object.entries(protocol)) {
    const file = Object.entries(namespace).find(([key]) => key.startsWith('file_'))?.[1] as DescFile;
    actual[name] = `${file.name}.proto`;
  }
  assert.deepEqual(actual, expected);
  assert.equal(protocol.robotPb.RobotService.typeName, 'viam.app.v1.RobotService');
  assert.equal(protocol.dataPb.DataService.method.tabularDataByMQL.methodKind, 'unary');
});
