/** Whether a machine part is connected, from when it last called the cloud (wire-protocol §4.4). */
export type OnlineStatus = 'online' | 'offline' | 'awaiting-setup';

export interface Liveness {
  status: OnlineStatus;
  /** Seconds since the part was last online; 0 while online or never seen. */
  secondsSinceOnline: number;
}

export function livenessOf(lastAccess: Date | null, nowMs: number, offlineAfterMs: number): Liveness {
  if (!lastAccess) return { status: 'awaiting-setup', secondsSinceOnline: 0 };
  const silentMs = Math.max(0, nowMs - lastAccess.getTime());
  if (silentMs < offlineAfterMs) return { status: 'online', secondsSinceOnline: 0 };
  return { status: 'offline', secondsSinceOnline: Math.floor(silentMs / 1000) };
}
