import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the secret is `whsec_<base64 key>`; the
 * signed content is `<webhook-id>.<webhook-timestamp>.<body>`; `webhook-signature` is
 * `v1,<base64 HMAC-SHA256>`. The id is the delivery id, the same on every retry and redelivery, so
 * receivers can drop duplicates; the timestamp (unix seconds) lets them reject replays.
 */
export function standardWebhookHeaders(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': `v1,${signature}`,
  };
}
