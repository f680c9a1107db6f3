import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { MachineConfig } from '../config/machine-config.ts';
import { invalidConfig } from '../errors.ts';

/** How the machine API listens, derived from the applied config and the flags (A7.1). */
export interface WebOptions {
  /** Host to bind (`0.0.0.0` for all interfaces). */
  readonly host: string;
  readonly port: number;
  readonly tls: TlsSource | undefined;
}

export type TlsSource =
  | { readonly kind: 'files'; readonly certFile: string; readonly keyFile: string }
  /** The certificate the cloud issued for the machine (`Certificate` RPC), PEM. */
  | { readonly kind: 'cloud'; readonly certificate: string; readonly privateKey: string };

export const allInterfaces = '0.0.0.0';

/**
 * `network.bind_address` (default `localhost:8080`) with `network.tls_cert_file`/`tls_key_file`, or the
 * cloud's certificate; a cloud-managed machine with a certificate and no explicit bind address listens
 * on `:8080` (all interfaces). `-no-tls` / `network.no_tls` serve plain HTTP regardless.
 */
export function webOptionsFromConfig(config: MachineConfig, flags: { readonly noTls: boolean }): WebOptions {
  const network = config.network;
  const noTls = flags.noTls || network.noTls;
  const cloudCert =
    config.cloud?.tlsCertificate && config.cloud.tlsPrivateKey
      ? { certificate: config.cloud.tlsCertificate, privateKey: config.cloud.tlsPrivateKey }
      : undefined;
  let tls: TlsSource | undefined;
  if (!noTls && network.tlsCertFile && network.tlsKeyFile) {
    tls = { kind: 'files', certFile: network.tlsCertFile, keyFile: network.tlsKeyFile };
  } else if (!noTls && cloudCert) {
    tls = { kind: 'cloud', ...cloudCert };
  }
  const bindAddress = tls?.kind === 'cloud' && network.bindAddressDefaulted ? ':8080' : network.bindAddress;
  const { host, port } = parseBindAddress(bindAddress);
  return { host, port, tls };
}

export function parseBindAddress(bindAddress: string): { host: string; port: number } {
  const colon = bindAddress.lastIndexOf(':');
  const port = Number(bindAddress.slice(colon + 1));
  if (colon < 0 || !Number.isInteger(port) || port < 0 || port > 65_535) {
    throw invalidConfig('network.bind_address', 'must be host:port with a port from 0 to 65535', bindAddress);
  }
  const host = bindAddress.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  return { host: host === '' ? allInterfaces : host, port };
}

export function webOptionsEqual(a: WebOptions, b: WebOptions): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** Certificate files for the listener: the configured ones, or the cloud's PEM written owner-only under `dir`. */
export async function tlsFiles(tls: TlsSource, dir: string): Promise<{ certFile: string; keyFile: string }> {
  if (tls.kind === 'files') return { certFile: tls.certFile, keyFile: tls.keyFile };
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const certFile = path.join(dir, 'cloud-cert.pem');
  const keyFile = path.join(dir, 'cloud-key.pem');
  await writeFile(certFile, tls.certificate, { mode: 0o600 });
  await writeFile(keyFile, tls.privateKey, { mode: 0o600 });
  return { certFile, keyFile };
}
