/** In-memory model of one `.proto` file, as recovered from protoc-gen-es v1 declaration comments. */

export interface FieldModel {
  /** `optional` (proto3 explicit presence), `repeated`, or '' */
  label: '' | 'optional' | 'repeated';
  /** scalar name, fully-qualified type name, or `map<k, v>` exactly as written in the comment */
  type: string;
  name: string;
  number: number;
  /** field options as written, e.g. `[deprecated = true]`, or '' */
  options: string;
  /** name of the enclosing oneof, if any */
  oneof: string | undefined;
}

export interface MessageModel {
  fullName: string;
  fields: FieldModel[];
}

export interface EnumValueModel {
  name: string;
  number: number;
  options: string;
}

export interface EnumModel {
  fullName: string;
  values: EnumValueModel[];
}

export type MethodKind = 'Unary' | 'ServerStreaming' | 'ClientStreaming' | 'BiDiStreaming';

export interface MethodModel {
  name: string;
  /** fully-qualified type names */
  input: string;
  output: string;
  kind: MethodKind;
}

export interface ServiceModel {
  fullName: string;
  methods: MethodModel[];
}

export interface ProtoFileModel {
  /** e.g. `app/data/v1/data.proto` */
  path: string;
  packageName: string;
  syntax: 'proto2' | 'proto3';
  messages: MessageModel[];
  enums: EnumModel[];
  services: ServiceModel[];
}

export const scalarTypes: ReadonlySet<string> = new Set([
  'double',
  'float',
  'int64',
  'uint64',
  'int32',
  'fixed64',
  'fixed32',
  'bool',
  'string',
  'bytes',
  'uint32',
  'sfixed32',
  'sfixed64',
  'sint32',
  'sint64',
]);
