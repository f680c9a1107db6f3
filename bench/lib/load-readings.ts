import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { BootstrapFile } from '../../apps/cloud/src/bootstrap.ts';
import { findOrCreateCaptureSource } from '../../apps/cloud/src/domain/data/ingest/capture-sources.ts';
import {
  ensureReadingPartitions,
  monthIndexOf,
} from '../../apps/cloud/src/domain/data/ingest/reading-partitions.ts';
import { createMachine } from './clients.ts';
import { fmtInt, round } from './report.ts';

export const dayMs = 24 * 3600_000;

export interface LoadedReadings {
  loaded: number;
  partitions: number;
  /** Capture-source IDs; reading n belongs to sourceIds[n % length]. */
  sourceIds: string[];
  /** Readings are spread evenly over [startMs, endMs] (180 days ending a minute ago). */
  startMs: number;
  endMs: number;
}

/** The payload of bench reading n: six slowly varying sensor fields. */
export function sensorPayload(n: number) {
  const phase = n / 1000;
  return {
    readings: {
      temperature: round(21 + 4 * Math.sin(phase), 3),
      humidity: round(45 + 10 * Math.cos(phase / 3), 3),
      pressure: round(1013.25 + Math.sin(phase / 7), 3),
      co2_ppm: 400 + (n % 97),
      battery_v: round(12.6 - (n % 1000) / 10_000, 4),
      status: n % 500 === 0 ? 'warn' : 'ok',
    },
  };
}

/**
 * COPYs text-format `readings` rows (organization_id, source_id, captured_at, time_requested, time_received,
 * synced_at, size_bytes, data; one line each, newline included) in 5,000-line chunks, then VACUUM ANALYZE.
 */
export async function copyReadingLines(pool: pg.Pool, lines: Iterable<string>): Promise<void> {
  function* chunks(): Generator<Buffer> {
    let chunk: string[] = [];
    for (const line of lines) {
      chunk.push(line);
      if (chunk.length === 5000) {
        yield Buffer.from(chunk.join(''));
        chunk = [];
      }
    }
    if (chunk.length) yield Buffer.from(chunk.join(''));
  }
  const client = await pool.connect();
  try {
    await pipeline(
      Readable.from(chunks()),
      client.query(
        copyFrom(
          'COPY readings (organization_id, source_id, captured_at, time_requested, time_received, synced_at, size_bytes, data) FROM STDIN',
        ),
      ),
    );
  } finally {
    client.release();
  }
  await pool.query('VACUUM (ANALYZE) readings');
  await pool.query('ANALYZE capture_sources');
}

/**
 * Loads `count` sensor readings of the bootstrap organization with COPY through the same tables the ingest
 * path writes (capture_sources rows made by the ingest code's findOrCreateCaptureSource, month partitions by
 * its ensureReadingPartitions): 2 machines × 4 sensors (`sensor-1`…`sensor-4`), 180 days, then VACUUM
 * ANALYZE. Each payload is `{readings: {temperature, humidity, pressure, co2_ppm, battery_v, status}}`.
 */
export async function loadReadings(
  pool: pg.Pool,
  bootstrap: BootstrapFile,
  count: number,
): Promise<LoadedReadings> {
  const loadBegan = performance.now();
  const machines = [
    await createMachine(pool, bootstrap, 'bench-rover-1'),
    await createMachine(pool, bootstrap, 'bench-rover-2'),
  ];
  const sourceIds: string[] = [];
  for (const machine of machines) {
    for (let s = 1; s <= 4; s++) {
      sourceIds.push(
        await findOrCreateCaptureSource(pool, {
          organizationId: bootstrap.organization_id,
          locationId: bootstrap.location_id,
          robotId: machine.robotId,
          partId: machine.partId,
          componentType: 'rdk:component:sensor',
          componentName: `sensor-${s}`,
          methodName: 'Readings',
          methodParameters: {},
          tags: [],
        }),
      );
    }
  }
  const endMs = Date.now() - 60_000;
  const startMs = endMs - 180 * dayMs;
  const stepMs = (endMs - startMs) / count;
  const months = new Set<number>();
  for (let t = startMs; t <= endMs + dayMs; t += dayMs) months.add(monthIndexOf(t));
  await ensureReadingPartitions(pool, months);

  const syncedIso = new Date().toISOString();
  function* readingLines(): Generator<string> {
    for (let n = 0; n < count; n++) {
      const at = Math.floor(startMs + n * stepMs);
      const json = JSON.stringify(sensorPayload(n));
      const iso = new Date(at).toISOString();
      const received = new Date(at + 3).toISOString();
      yield `${bootstrap.organization_id}\t${sourceIds[n % sourceIds.length]}\t${iso}\t${iso}\t${received}\t${syncedIso}\t${Buffer.byteLength(json)}\t${json}\n`;
    }
  }
  await copyReadingLines(pool, readingLines());
  const loaded = (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM readings')).rows[0]?.n ?? 0;
  const partitions =
    (
      await pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'readings'::regclass",
      )
    ).rows[0]?.n ?? 0;
  console.log(
    `loaded ${fmtInt(loaded)} readings over ${sourceIds.length} sources and ${partitions} month partitions in ${((performance.now() - loadBegan) / 1000).toFixed(1)}s (COPY + VACUUM ANALYZE)`,
  );
  return { loaded, partitions, sourceIds, startMs, endMs };
}
