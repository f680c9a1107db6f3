export { createInlineGzip, type InlineGzipOptions } from './compression.ts';
export { applyCors } from './cors.ts';
export { createErrorMappingInterceptor, type ErrorMapper } from './error-interceptor.ts';
export { signHs256Token, verifyHs256Token } from './hs256-token.ts';
export { type Listener, type ListenOptions, listen, type RequestHandler } from './listen.ts';
