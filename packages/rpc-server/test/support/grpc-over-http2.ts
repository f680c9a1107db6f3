import http2 from 'node:http2';

/**
 * One raw gRPC call over HTTP/2 (h2c for `http://`, TLS without verification for `https://`): sends
 * `message` (protobuf bytes) to `path` and resolves with the `grpc-status` the server answered.
 */
export async function grpcStatusOverHttp2(
  url: string,
  path: string,
  message: Uint8Array = new Uint8Array(),
): Promise<string | undefined> {
  const session = http2.connect(url, { rejectUnauthorized: false });
  try {
    return await new Promise<string | undefined>((resolve, reject) => {
      session.once('error', reject);
      const stream = session.request({
        ':method': 'POST',
        ':path': path,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      let status: string | undefined;
      stream.on('response', (headers) => {
        status = headers['grpc-status'] as string | undefined;
      });
      stream.on('trailers', (trailers) => {
        status = (trailers['grpc-status'] as string | undefined) ?? status;
      });
      stream.on('close', () => resolve(status));
      stream.on('error', reject);
      stream.resume();
      const frame = Buffer.alloc(5 + message.length);
      frame.writeUInt32BE(message.length, 1);
      frame.set(message, 5);
      stream.end(frame);
    });
  } finally {
    session.close();
  }
}
