import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';

export interface MailMessage {
  to: readonly string[];
  subject: string;
  text: string;
  html: string;
  /** Extra headers (e.g. a stable Message-ID derived from the delivery). */
  headers?: Record<string, string>;
}

/** How an SMTP transaction ended. `responseCode` is the server's reply code when there was one. */
export interface MailResult {
  accepted: boolean;
  responseCode: number | undefined;
  error: string | undefined;
  /** Network errors, timeouts and SMTP 4xx replies may pass later; 5xx replies and bad credentials will not. */
  retryable: boolean;
}

export interface Mailer {
  send(message: MailMessage, signal: AbortSignal): Promise<MailResult>;
  close(): void;
}

/**
 * Outgoing mail over SMTP with nodemailer (pooled connections). The SMTP URL may carry credentials: it is
 * never logged, and error texts are built from the reply code and message only.
 */
export function createMailer(options: { smtpUrl: string; from: string; timeoutMs: number }): Mailer {
  const transport = nodemailer.createTransport({
    url: options.smtpUrl,
    pool: true,
    maxConnections: 4,
    connectionTimeout: options.timeoutMs,
    greetingTimeout: options.timeoutMs,
    socketTimeout: options.timeoutMs,
    dnsTimeout: options.timeoutMs,
  } as SMTPTransport.Options);
  return {
    async send(message, signal) {
      if (signal.aborted) return failure(undefined, 'cancelled: the cloud is stopping', true);
      let onAbort: (() => void) | undefined;
      const aborted = new Promise<MailResult>((resolve) => {
        onAbort = () => resolve(failure(undefined, 'cancelled: the cloud is stopping', true));
        signal.addEventListener('abort', onAbort, { once: true });
      });
      const sending = transport
        .sendMail({
          from: options.from,
          to: [...message.to],
          subject: message.subject,
          text: message.text,
          html: message.html,
          ...(message.headers ? { headers: message.headers } : {}),
        })
        .then(
          (info): MailResult => {
            const rejected = (info as { rejected?: unknown[] }).rejected ?? [];
            if (rejected.length > 0 && rejected.length >= message.to.length) {
              return failure(undefined, 'every recipient was rejected', false);
            }
            return {
              accepted: true,
              responseCode: replyCode(info.response),
              error: undefined,
              retryable: false,
            };
          },
          (error: { code?: string; responseCode?: number; response?: string; message?: string }) => {
            const code = error.responseCode;
            const text = code
              ? `SMTP ${code}: ${oneLine(error.response ?? error.message ?? '')}`
              : `SMTP ${error.code ?? 'error'}: ${oneLine(error.message ?? String(error))}`;
            const retryable =
              code !== undefined ? code < 500 : error.code !== 'EAUTH' && error.code !== 'EENVELOPE';
            return failure(code, text, retryable);
          },
        );
      try {
        return await Promise.race([sending, aborted]);
      } finally {
        if (onAbort) signal.removeEventListener('abort', onAbort);
      }
    },
    close() {
      transport.close();
    },
  };
}

function failure(responseCode: number | undefined, error: string, retryable: boolean): MailResult {
  return { accepted: false, responseCode, error, retryable };
}

function replyCode(response: unknown): number | undefined {
  const match = typeof response === 'string' ? /^(\d{3})/.exec(response) : null;
  return match ? Number(match[1]) : undefined;
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}
