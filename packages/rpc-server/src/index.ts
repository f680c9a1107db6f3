export { applyCors } from './cors.ts';
export { type Listener, type ListenOptions, listen, type RequestHandler } from './listen.ts';
