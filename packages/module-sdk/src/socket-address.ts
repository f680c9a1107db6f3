/**
 * Module and parent addresses (machine-runtime.md A3.2): a unix socket path, or `host:port` in TCP
 * mode (`127.0.0.1:40123`). A value ending in `:<digits>` is TCP; anything else is a socket path.
 */
export type SocketAddress = { kind: 'unix'; path: string } | { kind: 'tcp'; host: string; port: number };

const tcpPattern = /^(.*):(\d{1,5})$/;

export function parseSocketAddress(text: string): SocketAddress {
  const withoutScheme = text.startsWith('unix:') ? text.slice('unix:'.length) : text;
  const match = tcpPattern.exec(withoutScheme);
  if (match && !text.startsWith('unix:')) {
    const port = Number(match[2]);
    if (port >= 0 && port < 65536) return { kind: 'tcp', host: match[1] || '127.0.0.1', port };
  }
  return { kind: 'unix', path: withoutScheme };
}

export function formatSocketAddress(address: SocketAddress): string {
  return address.kind === 'unix' ? address.path : `${address.host}:${address.port}`;
}
