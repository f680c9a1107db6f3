import { randomBytes } from 'node:crypto';

/**
 * Machine addresses follow Viam's pattern (wire-protocol §4.3), which the TS SDK parses back
 * (`<name>.<locationId>.viam.<…>`): `<dns_name>.<location_id>.viam.cloud` and
 * `<dns_name>.<location_id>.local.viam.cloud`.
 */
export function partFqdn(dnsName: string, locationId: string): string {
  return `${dnsName}.${locationId}.viam.cloud`;
}

export function partLocalFqdn(dnsName: string, locationId: string): string {
  return `${dnsName}.${locationId}.local.viam.cloud`;
}

const dnsLabelMaxChars = 63;

/** A DNS label derived from a part name: lowercase letters, digits and inner hyphens, at most 63 characters. */
export function dnsNameFromPartName(name: string): string {
  const label = name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, dnsLabelMaxChars - 7)
    .replace(/-+$/g, '');
  return label === '' ? 'part' : label;
}

/** Another candidate when the first one is taken (dns names are unique across the cloud). */
export function dnsNameWithSuffix(base: string): string {
  return `${base}-${randomBytes(3).toString('hex')}`;
}
