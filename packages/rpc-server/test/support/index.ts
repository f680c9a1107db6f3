/** Test helpers for servers built on @mcloud/rpc-server (`@mcloud/rpc-server/testing`). */
export { grpcStatusOverHttp2 } from './grpc-over-http2.ts';
export { createSelfSignedCertificate, type SelfSignedCertificate } from './self-signed-certificate.ts';
