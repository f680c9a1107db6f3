import type { EnumModel, MessageModel, MethodKind, ProtoFileModel, ServiceModel } from './proto-model.ts';

const fileHeader = /@generated from file (\S+) \(package ([\w.]+), syntax (proto2|proto3)\)/;
const messageLine = /@generated from message ([\w.]+)\s*$/;
const enumLine = /@generated from enum ([\w.]+)\s*$/;
const enumValueLine = /@generated from enum value: (\w+) = (-?\d+)\s*(\[.*\])?;/;
const oneofLine = /@generated from oneof ([\w.]+)\s*$/;
const fieldLine =
  /@generated from field: (?:(optional|repeated) )?(map<\s*\w+\s*,\s*[\w.]+\s*>|[\w.]+) (\w+) = (\d+)\s*(\[.*\])?;/;
const oneofEnd = /^\s*\} \| \{ case: undefined; value\?: undefined \};/;
const classLine = /export declare class (\w+) /;
const typeNameLine = /static readonly typeName = "([\w.]+)";/;
const serviceLine = /@generated from service ([\w.]+)\s*$/;
const rpcLine = /@generated from rpc ([\w.]+)\s*$/;
const ioLine = /readonly (I|O): typeof (\w+),/;
const kindLine = /readonly kind: MethodKind\.(Unary|ServerStreaming|ClientStreaming|BiDiStreaming),/;
const importLine = /^import (?:type )?\{([^}]*)\} from "([^"]+)";/;

export interface ParsedDeclarations {
  file: ProtoFileModel;
  /** exported class name -> protobuf type name (messages declared in this d.ts) */
  classTypeNames: Map<string, string>;
  /** imported identifier -> module specifier */
  imports: Map<string, string>;
  /** services whose method I/O are still local identifiers (resolved by the caller) */
  unresolvedServices: ServiceModel[];
}

function fail(source: string, lineNo: number, message: string): never {
  throw new Error(`${source}:${lineNo + 1}: ${message}`);
}

/** Parses one protoc-gen-es v1 `*_pb.d.ts` or protoc-gen-connect-es `*_connect.d.ts` file. */
export function parseDeclarations(text: string, source: string): ParsedDeclarations {
  const lines = text.split('\n');
  const header = fileHeader.exec(text);
  if (!header) throw new Error(`${source}: no "@generated from file" header`);
  const [, path = '', packageName = '', syntax = 'proto3'] = header;
  const file: ProtoFileModel = {
    path,
    packageName,
    syntax: syntax as ProtoFileModel['syntax'],
    messages: [],
    enums: [],
    services: [],
  };
  const classTypeNames = new Map<string, string>();
  const imports = new Map<string, string>();
  let message: MessageModel | undefined;
  let enumModel: EnumModel | undefined;
  let oneof: string | undefined;
  let className: string | undefined;
  let service: ServiceModel | undefined;
  let rpc: { name: string; input?: string; output?: string } | undefined;

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (!line.includes('@generated from')) {
      let m = importLine.exec(line);
      if (m) {
        for (const part of (m[1] ?? '').split(',')) {
          const [imported, local] = part.trim().split(/\s+as\s+/);
          if (imported) imports.set(local ?? imported, m[2] ?? '');
        }
        continue;
      }
      if (oneof !== undefined && oneofEnd.test(line)) {
        oneof = undefined;
        continue;
      }
      m = classLine.exec(line);
      if (m) {
        className = m[1];
        continue;
      }
      m = typeNameLine.exec(line);
      if (m && className) {
        classTypeNames.set(className, m[1] ?? '');
        className = undefined;
        continue;
      }
      if (rpc) {
        m = ioLine.exec(line);
        if (m) {
          if (m[1] === 'I') rpc.input = m[2];
          else rpc.output = m[2];
          continue;
        }
        m = kindLine.exec(line);
        if (m) {
          if (!service || !rpc.input || !rpc.output) fail(source, i, `incomplete rpc ${rpc.name}`);
          service.methods.push({
            name: rpc.name,
            input: rpc.input,
            output: rpc.output,
            kind: m[1] as MethodKind,
          });
          rpc = undefined;
        }
      }
      continue;
    }
    let m = fieldLine.exec(line);
    if (m) {
      if (!message) fail(source, i, 'field outside a message');
      message.fields.push({
        label: (m[1] ?? '') as '' | 'optional' | 'repeated',
        type: (m[2] ?? '').replace(/\s+/g, ' ').replace(/<\s*/, '<').replace(/\s*>/, '>'),
        name: m[3] ?? '',
        number: Number(m[4]),
        options: m[5] ?? '',
        oneof,
      });
      continue;
    }
    m = enumValueLine.exec(line);
    if (m) {
      if (!enumModel) fail(source, i, 'enum value outside an enum');
      enumModel.values.push({ name: m[1] ?? '', number: Number(m[2]), options: m[3] ?? '' });
      continue;
    }
    m = messageLine.exec(line);
    if (m) {
      message = { fullName: m[1] ?? '', fields: [] };
      file.messages.push(message);
      enumModel = undefined;
      oneof = undefined;
      continue;
    }
    m = enumLine.exec(line);
    if (m) {
      enumModel = { fullName: m[1] ?? '', values: [] };
      file.enums.push(enumModel);
      message = undefined;
      continue;
    }
    m = oneofLine.exec(line);
    if (m) {
      const full = m[1] ?? '';
      if (!message || !full.startsWith(`${message.fullName}.`)) fail(source, i, `stray oneof ${full}`);
      oneof = full.slice(message.fullName.length + 1);
      continue;
    }
    m = serviceLine.exec(line);
    if (m) {
      service = { fullName: m[1] ?? '', methods: [] };
      file.services.push(service);
      message = undefined;
      enumModel = undefined;
      continue;
    }
    m = rpcLine.exec(line);
    if (m) {
      const full = m[1] ?? '';
      if (!service || !full.startsWith(`${service.fullName}.`)) fail(source, i, `stray rpc ${full}`);
      rpc = { name: full.slice(service.fullName.length + 1) };
      continue;
    }
    if (/@generated from extension:/.test(line)) {
      // Custom options (extensions) are not part of the wire schema we serve.
      message = undefined;
      enumModel = undefined;
      continue;
    }
    if (/@generated (from file|by)/.test(line)) continue;
    fail(source, i, `unrecognised comment: ${line.trim()}`);
  }
  return { file, classTypeNames, imports, unresolvedServices: file.services };
}
