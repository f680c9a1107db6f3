import type { ConnectError, Interceptor } from '@connectrpc/connect';

/** Turns anything a handler threw into the ConnectError the client sees (domain errors, bugs). */
export type ErrorMapper = (error: unknown, procedure: string) => ConnectError;

/**
 * Maps every error once, for unary calls and for server streams (which fail while they are consumed,
 * after `next` returned). `procedure` is `package.Service/Method`.
 */
export function createErrorMappingInterceptor(toConnectError: ErrorMapper): Interceptor {
  return (next) => async (req) => {
    const procedure = `${req.service.typeName}/${req.method.name}`;
    try {
      const res = await next(req);
      return res.stream ? { ...res, message: mapStreamErrors(res.message, procedure, toConnectError) } : res;
    } catch (error) {
      throw toConnectError(error, procedure);
    }
  };
}

async function* mapStreamErrors<T>(
  messages: AsyncIterable<T>,
  procedure: string,
  toConnectError: ErrorMapper,
) {
  try {
    yield* messages;
  } catch (error) {
    throw toConnectError(error, procedure);
  }
}
