import { createContextKey, type Interceptor } from '@connectrpc/connect';
import { MachineError } from '../../errors.ts';
import type { MachineAuthConfig } from './machine-auth-config.ts';
import type { MachineAuthenticator, MachinePrincipal } from './machine-authenticator.ts';

/** The caller of an authenticated call (undefined when the machine requires no authentication). */
export const principalKey = createContextKey<MachinePrincipal | undefined>(undefined);

const publicProcedures = new Set(['proto.rpc.v1.AuthService/Authenticate']);

/** Requires `authorization: Bearer <token>` on every call except Authenticate, when auth is configured. */
export function createAuthInterceptor(
  authenticator: MachineAuthenticator,
  currentConfig: () => MachineAuthConfig,
): Interceptor {
  return (next) => async (req) => {
    if (!currentConfig().required || publicProcedures.has(`${req.service.typeName}/${req.method.name}`)) {
      return next(req);
    }
    const match = /^Bearer\s+(\S+)$/i.exec(req.header.get('authorization') ?? '');
    if (!match?.[1]) {
      throw new MachineError(
        'Unauthenticated',
        'authentication required: call proto.rpc.v1.AuthService/Authenticate, then send "authorization: Bearer <access token>"',
      );
    }
    req.contextValues.set(principalKey, authenticator.verify(match[1]));
    return next(req);
  };
}
