import { createContextKey, type HandlerContext } from '@connectrpc/connect';
import type { Principal } from '../domain/auth/principal.ts';
import { unauthenticated } from '../domain/errors.ts';

export const principalKey = createContextKey<Principal | undefined>(undefined, { description: 'caller' });

/** The authenticated caller of this RPC (the auth interceptor put it there). */
export function principalOf(context: HandlerContext): Principal {
  const principal = context.values.get(principalKey);
  if (!principal) throw unauthenticated();
  return principal;
}
