/**
 * Recovers `.proto` sources from the type declarations of the pinned @viamrobotics/sdk.
 * protoc-gen-es v1 writes every package, message, field number, oneof, map, enum and rpc kind
 * into `@generated from …` comments; this turns them back into proto files.
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, posix, relative } from 'node:path';
import { packageRoot } from './extract/package-root.ts';
import { type ParsedDeclarations, parseDeclarations } from './extract/parse-declarations.ts';
import type { ProtoFileModel } from './extract/proto-model.ts';
import { renderProto } from './extract/render-proto.ts';
import { wellKnownTypeFile } from './extract/well-known-types.ts';

export interface ExtractResult {
  files: number;
  messages: number;
  enums: number;
  services: number;
}

/** Directory holding the SDK's generated declarations (`dist/gen`). */
export function sdkGenDir(): string {
  return join(packageRoot('@viamrobotics/sdk', dirname(import.meta.dirname)), 'dist', 'gen');
}

async function listDeclarations(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && /_(pb|connect)\.d\.ts$/.test(e.name))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

export async function extractProtos(outDir: string, genDir = sdkGenDir()): Promise<ExtractResult> {
  const parsed = new Map<string, ParsedDeclarations>();
  for (const path of await listDeclarations(genDir)) {
    const source = relative(genDir, path).split('\\').join('/');
    parsed.set(source, parseDeclarations(await readFile(path, 'utf8'), source));
  }

  // Merge the _pb and _connect halves of each proto file.
  const files = new Map<string, ProtoFileModel>();
  for (const { file } of parsed.values()) {
    const existing = files.get(file.path);
    if (!existing) {
      files.set(file.path, { ...file, services: [] });
    } else {
      existing.messages.push(...file.messages);
      existing.enums.push(...file.enums);
    }
  }

  // Index every declared type by name, rejecting collisions.
  const typeFiles = new Map<string, string>();
  for (const file of files.values()) {
    for (const { fullName } of [...file.messages, ...file.enums]) {
      const other = typeFiles.get(fullName);
      if (other) throw new Error(`${fullName} declared in both ${other} and ${file.path}`);
      typeFiles.set(fullName, file.path);
    }
  }
  const resolveTypeFile = (typeName: string): string => {
    const path = typeFiles.get(typeName) ?? wellKnownTypeFile(typeName);
    if (!path) throw new Error(`no file declares ${typeName}`);
    return path;
  };

  // Resolve rpc input/output class identifiers through the connect file's imports.
  for (const [source, declarations] of parsed) {
    for (const service of declarations.unresolvedServices) {
      const resolveClass = (identifier: string): string => {
        const module = declarations.imports.get(identifier);
        if (module === '@bufbuild/protobuf') return `google.protobuf.${identifier}`;
        if (!module) throw new Error(`${source}: ${identifier} is not imported`);
        const target = posix.join(posix.dirname(source), module.replace(/\.js$/, '.d.ts'));
        const typeName = parsed.get(target)?.classTypeNames.get(identifier);
        if (!typeName) throw new Error(`${source}: cannot resolve ${identifier} in ${target}`);
        return typeName;
      };
      const target = files.get(declarations.file.path);
      target?.services.push({
        fullName: service.fullName,
        methods: service.methods.map((m) => ({
          ...m,
          input: resolveClass(m.input),
          output: resolveClass(m.output),
        })),
      });
    }
  }

  await rm(outDir, { recursive: true, force: true });
  const result: ExtractResult = { files: 0, messages: 0, enums: 0, services: 0 };
  for (const file of files.values()) {
    if (file.path.startsWith('google/protobuf/')) continue; // buf provides the well-known types
    const out = join(outDir, file.path);
    await mkdir(dirname(out), { recursive: true });
    await writeFile(out, renderProto(file, resolveTypeFile));
    result.files++;
    result.messages += file.messages.length;
    result.enums += file.enums.length;
    result.services += file.services.length;
  }
  return result;
}
