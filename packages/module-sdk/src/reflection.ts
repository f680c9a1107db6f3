/**
 * gRPC server reflection (grpc.reflection.v1alpha and v1) for the services a module serves. A Go
 * parent (viam-server) looks up every service of a module's handler map with `file_containing_symbol`
 * and fails the module's start-up without it (machine-runtime.md appendix §2.3). Answers
 * `list_services`, `file_containing_symbol` and `file_by_filename` with the file and its transitive
 * dependencies (serialized FileDescriptorProtos); extensions are answered NotFound.
 */
import { type DescFile, type DescService, toBinary } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { Code, type ConnectRouter } from '@connectrpc/connect';
import { reflectionPb, reflectionV1alphaPb } from '@mcloud/protocol/machine';

type Request = reflectionPb.ServerReflectionRequest | reflectionV1alphaPb.ServerReflectionRequest;

export function registerReflection(router: ConnectRouter, services: readonly DescService[]): void {
  const all = [...services, reflectionPb.ServerReflection, reflectionV1alphaPb.ServerReflection];
  const files = new Map<string, DescFile>();
  const addFile = (file: DescFile) => {
    if (files.has(file.proto.name)) return;
    files.set(file.proto.name, file);
    for (const dependency of file.dependencies) addFile(dependency);
  };
  for (const service of all) addFile(service.file);
  const symbols = new Map<string, DescFile>();
  for (const file of files.values()) {
    for (const message of file.messages) indexMessage(symbols, file, message);
    for (const enumDesc of file.enums) symbols.set(enumDesc.typeName, file);
    for (const service of file.services) {
      symbols.set(service.typeName, file);
      for (const method of service.methods) symbols.set(`${service.typeName}.${method.name}`, file);
    }
  }
  const withDependencies = (file: DescFile): Uint8Array[] => {
    const seen = new Set<string>();
    const out: Uint8Array[] = [];
    const visit = (current: DescFile) => {
      if (seen.has(current.proto.name)) return;
      seen.add(current.proto.name);
      out.push(toBinary(FileDescriptorProtoSchema, current.proto));
      for (const dependency of current.dependencies) visit(dependency);
    };
    visit(file);
    return out;
  };
  const notFound = (what: string) => ({
    case: 'errorResponse' as const,
    value: { errorCode: Code.NotFound, errorMessage: `${what} not found` },
  });
  const answer = (request: Request) => {
    const message = request.messageRequest;
    switch (message.case) {
      case 'listServices':
        return {
          case: 'listServicesResponse' as const,
          value: { service: services.map((service) => ({ name: service.typeName })) },
        };
      case 'fileContainingSymbol': {
        const file = symbols.get(message.value.replace(/^\./, ''));
        return file
          ? {
              case: 'fileDescriptorResponse' as const,
              value: { fileDescriptorProto: withDependencies(file) },
            }
          : notFound(`symbol ${message.value}`);
      }
      case 'fileByFilename': {
        const file = files.get(message.value);
        return file
          ? {
              case: 'fileDescriptorResponse' as const,
              value: { fileDescriptorProto: withDependencies(file) },
            }
          : notFound(`file ${message.value}`);
      }
      default:
        return notFound(`${message.case ?? 'request'}`);
    }
  };
  router.service(reflectionPb.ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const request of requests) {
        yield { validHost: request.host, originalRequest: request, messageResponse: answer(request) };
      }
    },
  });
  router.service(reflectionV1alphaPb.ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const request of requests) {
        yield { validHost: request.host, originalRequest: request, messageResponse: answer(request) };
      }
    },
  });
}

function indexMessage(
  symbols: Map<string, DescFile>,
  file: DescFile,
  message: DescFile['messages'][number],
): void {
  symbols.set(message.typeName, file);
  for (const nested of message.nestedMessages) indexMessage(symbols, file, nested);
  for (const nested of message.nestedEnums) symbols.set(nested.typeName, file);
}
