import pg from 'pg';

/** Receives PostgreSQL NOTIFY messages; what replicas use to tell each other about events. */
export interface NotificationListener {
  /**
   * Calls `onMessage` for every NOTIFY on `channel` (LISTEN happens on the first subscriber). After the
   * connection was lost and re-established `onResync` runs: messages sent meanwhile were missed, so
   * subscribers re-read what they track from the database.
   */
  subscribe(channel: string, onMessage: (payload: string) => void, onResync?: () => void): () => void;
  /** Resolves once every subscribed channel is being listened to. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

interface Subscriber {
  onMessage: (payload: string) => void;
  onResync: (() => void) | undefined;
}

const reconnectDelaysMs = [100, 500, 1_000, 2_000, 5_000];
/** `application_name` of the listening connection (visible in pg_stat_activity). */
export const notificationListenerName = 'mcloud-notifications';

/** One dedicated connection per process, re-established with backoff when it drops. */
export function createNotificationListener(
  url: string,
  onError: (error: unknown) => void = () => {},
): NotificationListener {
  const channels = new Map<string, Set<Subscriber>>();
  let client: pg.Client | undefined;
  let connecting: Promise<void> | undefined;
  let closed = false;
  let attempt = 0;
  let reconnectTimer: NodeJS.Timeout | undefined;

  const quote = (channel: string) => `"${channel.replaceAll('"', '""')}"`;

  async function connect(resync: boolean): Promise<void> {
    const next = new pg.Client({ connectionString: url, application_name: notificationListenerName });
    next.on('notification', (message) => {
      for (const subscriber of channels.get(message.channel) ?? []) {
        try {
          subscriber.onMessage(message.payload ?? '');
        } catch (error) {
          onError(error);
        }
      }
    });
    next.on('error', (error) => {
      onError(error);
      scheduleReconnect(next);
    });
    next.on('end', () => scheduleReconnect(next));
    await next.connect();
    for (const channel of channels.keys()) await next.query(`LISTEN ${quote(channel)}`);
    client = next;
    attempt = 0;
    if (resync) {
      for (const subscribers of channels.values()) for (const s of subscribers) s.onResync?.();
    }
  }

  function scheduleReconnect(lost: pg.Client | undefined): void {
    if (closed || client !== lost) return;
    client = undefined;
    lost?.end().catch(() => {});
    const delay = reconnectDelaysMs[Math.min(attempt++, reconnectDelaysMs.length - 1)];
    reconnectTimer = setTimeout(() => {
      connecting = connect(true).catch((error: unknown) => {
        onError(error);
        scheduleReconnect(undefined);
      });
    }, delay);
  }

  function ensureConnected(): Promise<void> {
    if (client || closed) return Promise.resolve();
    connecting ??= connect(false).catch((error: unknown) => {
      connecting = undefined;
      throw error;
    });
    return connecting;
  }

  async function listenAll(): Promise<void> {
    await ensureConnected();
    // LISTEN is idempotent: covers channels added while the connection was being opened.
    for (const channel of channels.keys()) await client?.query(`LISTEN ${quote(channel)}`);
  }

  return {
    subscribe(channel, onMessage, onResync) {
      const subscriber: Subscriber = { onMessage, onResync };
      let set = channels.get(channel);
      if (!set) {
        set = new Set();
        channels.set(channel, set);
      }
      set.add(subscriber);
      listenAll().catch(onError);
      return () => {
        set.delete(subscriber);
      };
    },
    async ready() {
      await listenAll();
    },
    async close() {
      closed = true;
      clearTimeout(reconnectTimer);
      const current = client;
      client = undefined;
      await current?.end().catch(() => {});
    },
  };
}
