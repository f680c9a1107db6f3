import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface SelfSignedCertificate {
  readonly certFile: string;
  readonly keyFile: string;
  /** Deletes the temporary directory holding both files. */
  remove(): Promise<void>;
}

/** A one-day EC certificate for `localhost` / 127.0.0.1, made by `openssl` in a temporary directory. */
export async function createSelfSignedCertificate(): Promise<SelfSignedCertificate> {
  const dir = await mkdtemp(path.join(tmpdir(), 'rpc-server-cert-'));
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  const subject = ['-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'];
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1'];
  execFileSync('openssl', ['req', '-x509', ...key, ...subject, '-keyout', keyFile, '-out', certFile], {
    stdio: 'ignore',
  });
  return { certFile, keyFile, remove: () => rm(dir, { recursive: true, force: true }) };
}
