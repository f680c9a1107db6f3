import type { ServiceImpl } from '@connectrpc/connect';
import type { authPb } from '@mcloud/protocol';
import type { Authenticator } from '../../domain/auth/authenticator.ts';
import { DomainError, invalidArgument } from '../../domain/errors.ts';

/** `proto.rpc.v1.AuthService`: credentials in, bearer token out (wire-protocol §1.3–1.4). */
export function authServiceHandlers(
  authenticator: Authenticator,
): Partial<ServiceImpl<typeof authPb.AuthService>> {
  return {
    async authenticate(req, context) {
      if (context.requestHeader.get('authorization')) {
        throw new DomainError(
          'InvalidArgument',
          'already authenticated: Authenticate must be called without a token',
        );
      }
      if (!req.credentials) throw invalidArgument('credentials', 'is required');
      const accessToken = await authenticator.authenticate({
        type: req.credentials.type,
        entity: req.entity,
        payload: req.credentials.payload,
      });
      return { accessToken };
    },
  };
}
