import type { ConnectRouter } from '@connectrpc/connect';
import { authPb } from '@mcloud/protocol/machine';
import type { MachineAuthenticator } from './machine-authenticator.ts';

/** `proto.rpc.v1.AuthService` on the machine: credentials in, bearer token out (A7.3). */
export function registerAuthService(router: ConnectRouter, authenticator: MachineAuthenticator): void {
  router.service(authPb.AuthService, {
    authenticate(request) {
      const token = authenticator.authenticate(
        request.entity,
        request.credentials?.type ?? '',
        request.credentials?.payload ?? '',
      );
      return { accessToken: token };
    },
  });
}
