/** google.protobuf well-known types: buf ships these files, so they are imported, never extracted. */
const wellKnownFiles: Record<string, string> = {
  Any: 'any',
  Api: 'api',
  Method: 'api',
  Mixin: 'api',
  Duration: 'duration',
  Empty: 'empty',
  FieldMask: 'field_mask',
  SourceContext: 'source_context',
  Struct: 'struct',
  Value: 'struct',
  ListValue: 'struct',
  NullValue: 'struct',
  Timestamp: 'timestamp',
  Type: 'type',
  Field: 'type',
  Enum: 'type',
  EnumValue: 'type',
  Option: 'type',
  Syntax: 'type',
  DoubleValue: 'wrappers',
  FloatValue: 'wrappers',
  Int64Value: 'wrappers',
  UInt64Value: 'wrappers',
  Int32Value: 'wrappers',
  UInt32Value: 'wrappers',
  BoolValue: 'wrappers',
  StringValue: 'wrappers',
  BytesValue: 'wrappers',
};

/** Returns the import path of a well-known type, or undefined when `typeName` is not one. */
export function wellKnownTypeFile(typeName: string): string | undefined {
  if (!typeName.startsWith('google.protobuf.')) return undefined;
  const file = wellKnownFiles[typeName.slice('google.protobuf.'.length)];
  if (!file) throw new Error(`unknown google.protobuf type ${typeName}`);
  return `google/protobuf/${file}.proto`;
}
