import type { EnumModel, FieldModel, MessageModel, ProtoFileModel } from './proto-model.ts';
import { scalarTypes } from './proto-model.ts';

/** Resolves a fully-qualified type name to the `.proto` path that declares it. */
export type TypeFileResolver = (typeName: string) => string;

interface TypeNode {
  localName: string;
  message: MessageModel | undefined;
  enumModel: EnumModel | undefined;
  children: TypeNode[];
}

function typeRef(
  type: string,
  file: ProtoFileModel,
  resolve: TypeFileResolver,
  imports: Set<string>,
): string {
  if (scalarTypes.has(type)) return type;
  const target = resolve(type);
  if (target !== file.path) imports.add(target);
  return `.${type}`;
}

function renderFieldType(
  field: FieldModel,
  file: ProtoFileModel,
  resolve: TypeFileResolver,
  imports: Set<string>,
) {
  const map = /^map<(\w+), ([\w.]+)>$/.exec(field.type);
  if (map) return `map<${map[1]}, ${typeRef(map[2] ?? '', file, resolve, imports)}>`;
  return typeRef(field.type, file, resolve, imports);
}

function renderField(
  field: FieldModel,
  indent: string,
  file: ProtoFileModel,
  resolve: TypeFileResolver,
  imports: Set<string>,
): string {
  const label = field.label ? `${field.label} ` : '';
  const options = field.options ? ` ${field.options}` : '';
  const type = renderFieldType(field, file, resolve, imports);
  return `${indent}${label}${type} ${field.name} = ${field.number}${options};`;
}

function renderEnum(enumModel: EnumModel, localName: string, indent: string): string[] {
  const out = [`${indent}enum ${localName} {`];
  const numbers = new Set<number>();
  let aliases = false;
  for (const v of enumModel.values) {
    if (numbers.has(v.number)) aliases = true;
    numbers.add(v.number);
  }
  if (aliases) out.push(`${indent}  option allow_alias = true;`);
  for (const v of enumModel.values) {
    out.push(`${indent}  ${v.name} = ${v.number}${v.options ? ` ${v.options}` : ''};`);
  }
  out.push(`${indent}}`);
  return out;
}

function renderNode(
  node: TypeNode,
  indent: string,
  file: ProtoFileModel,
  resolve: TypeFileResolver,
  imports: Set<string>,
): string[] {
  if (node.enumModel) return renderEnum(node.enumModel, node.localName, indent);
  const message = node.message;
  if (!message) throw new Error(`${file.path}: ${node.localName} is nested in an undeclared message`);
  const out = [`${indent}message ${node.localName} {`];
  const inner = `${indent}  `;
  const emittedOneofs = new Set<string>();
  for (const field of message.fields) {
    if (field.oneof === undefined) {
      out.push(renderField(field, inner, file, resolve, imports));
      continue;
    }
    if (emittedOneofs.has(field.oneof)) continue;
    emittedOneofs.add(field.oneof);
    out.push(`${inner}oneof ${field.oneof} {`);
    for (const member of message.fields.filter((f) => f.oneof === field.oneof)) {
      out.push(renderField(member, `${inner}  `, file, resolve, imports));
    }
    out.push(`${inner}}`);
  }
  for (const child of node.children) out.push(...renderNode(child, inner, file, resolve, imports));
  out.push(`${indent}}`);
  return out;
}

function buildTypeTree(file: ProtoFileModel): TypeNode[] {
  const prefix = file.packageName ? `${file.packageName}.` : '';
  const nodes = new Map<string, TypeNode>();
  const roots: TypeNode[] = [];
  const nodeFor = (relative: string): TypeNode => {
    let node = nodes.get(relative);
    if (node) return node;
    const dot = relative.lastIndexOf('.');
    node = { localName: relative.slice(dot + 1), message: undefined, enumModel: undefined, children: [] };
    nodes.set(relative, node);
    if (dot < 0) roots.push(node);
    else nodeFor(relative.slice(0, dot)).children.push(node);
    return node;
  };
  const relativeName = (fullName: string) => {
    if (!fullName.startsWith(prefix)) throw new Error(`${file.path}: ${fullName} is outside package`);
    return fullName.slice(prefix.length);
  };
  // Declaration order of the d.ts is preserved: parents precede their nested types.
  for (const message of file.messages) nodeFor(relativeName(message.fullName)).message = message;
  for (const enumModel of file.enums) nodeFor(relativeName(enumModel.fullName)).enumModel = enumModel;
  return roots;
}

/** Renders one file model as `.proto` source text. */
export function renderProto(file: ProtoFileModel, resolve: TypeFileResolver): string {
  const imports = new Set<string>();
  const body: string[] = [];
  for (const node of buildTypeTree(file)) {
    body.push(...renderNode(node, '', file, resolve, imports), '');
  }
  for (const service of file.services) {
    const localName = service.fullName.slice(service.fullName.lastIndexOf('.') + 1);
    body.push(`service ${localName} {`);
    for (const method of service.methods) {
      const clientStream = method.kind === 'ClientStreaming' || method.kind === 'BiDiStreaming';
      const serverStream = method.kind === 'ServerStreaming' || method.kind === 'BiDiStreaming';
      const input = typeRef(method.input, file, resolve, imports);
      const output = typeRef(method.output, file, resolve, imports);
      body.push(
        `  rpc ${method.name}(${clientStream ? 'stream ' : ''}${input}) returns (${serverStream ? 'stream ' : ''}${output});`,
      );
    }
    body.push('}', '');
  }
  const head = [
    `// Extracted from the type declarations of @viamrobotics/sdk. Build output: do not edit.`,
    `syntax = "${file.syntax}";`,
    '',
  ];
  if (file.packageName) head.push(`package ${file.packageName};`, '');
  for (const path of [...imports].sort()) head.push(`import "${path}";`);
  if (imports.size > 0) head.push('');
  return `${[...head, ...body].join('\n').trimEnd()}\n`;
}
