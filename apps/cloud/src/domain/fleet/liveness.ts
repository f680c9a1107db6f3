/** Whether a machine part is connected, from when it last called the cloud (wire-protocol §4.4). */
export type OnlineStatus = 'online' | 'offline' | 'awaiting-setup';

export interface Liveness {
  status: OnlineStatus;
  /** Seconds since the part was last online; 0 while online or never seen. */
  secondsSinceOnline: number;
}

/**
 * Online while the last contact is within `offlineAfterMs`. `connectedLastAccess` is the last contact not
 * followed by the end of the part's live stream (null when the stream ended since): a machine whose
 * stream died shows offline at once instead of after the window.
 */
export function livenessOf(
  lastAccess: Date | null,
  nowMs: number,
  offlineAfterMs: number,
  connectedLastAccess: Date | null = lastAccess,
): Liveness {
  if (!lastAccess) return { status: 'awaiting-setup', secondsSinceOnline: 0 };
  if (connectedLastAccess && Math.max(0, nowMs - connectedLastAccess.getTime()) < offlineAfterMs) {
    return { status: 'online', secondsSinceOnline: 0 };
  }
  const silentMs = Math.max(0, nowMs - lastAccess.getTime());
  return { status: 'offline', secondsSinceOnline: Math.floor(silentMs / 1000) };
}
