import assert from 'node:assert/strict';
import { chmod, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createConfigCache } from '../../src/config/config-cache.ts';

let home: string;
before(async () => {
  home = await mkdtemp(path.join(tmpdir(), 'config-cache-'));
});
after(() => rm(home, { recursive: true, force: true }));

/** A config big enough that a plain (non-atomic) write is observable half done. */
const bigConfig = (generation: number) => ({
  revision: String(generation),
  components: Array.from({ length: 4000 }, (_, i) => ({
    name: `s${i}`,
    api: 'rdk:component:sensor',
    model: 'fake',
    attributes: { generation, padding: 'x'.repeat(100) },
  })),
});

describe('config cache (A1.4)', () => {
  it('is written owner-only (0600) in a 0700 VIAM_HOME, as 2-space JSON, and read back with its time', async () => {
    const viamHome = path.join(home, 'fresh', 'viam');
    const cache = createConfigCache(viamHome, 'part/1');
    assert.equal(await cache.exists(), false);
    assert.equal(await cache.read(), undefined);
    await cache.write({ revision: 'r1', cloud: { fqdn: 'f' } });
    assert.equal(path.basename(cache.path), 'cached_cloud_config_part_1.json');
    assert.equal((await stat(cache.path)).mode & 0o777, 0o600);
    assert.equal((await stat(viamHome)).mode & 0o777, 0o700);
    assert.equal(
      await readFile(cache.path, 'utf8'),
      '{\n  "revision": "r1",\n  "cloud": {\n    "fqdn": "f"\n  }\n}\n',
    );
    const read = await cache.read();
    assert.deepEqual(read?.json, { revision: 'r1', cloud: { fqdn: 'f' } });
    assert.ok(read && Math.abs(read.modifiedAt.getTime() - Date.now()) < 60_000);
    await cache.remove();
    assert.equal(await cache.exists(), false);
  });

  it('keeps the permissions an existing file had', async () => {
    const cache = createConfigCache(path.join(home, 'perm'), 'p');
    await cache.write({ revision: '1' });
    await chmod(cache.path, 0o640);
    await cache.write({ revision: '2' });
    assert.equal((await stat(cache.path)).mode & 0o777, 0o640);
    assert.deepEqual((await cache.read())?.json, { revision: '2' });
  });

  it('is replaced atomically: a concurrent reader only ever sees a whole old or new file, no temp files stay', async () => {
    const dir = path.join(home, 'atomic');
    const cache = createConfigCache(dir, 'p');
    await cache.write(bigConfig(0));
    let writing = true;
    const seen = new Set<string>();
    let reads = 0;
    const reader = (async () => {
      while (writing) {
        const text = await readFile(cache.path, 'utf8');
        reads++;
        // A torn read would not parse (or would mix generations).
        const parsed = JSON.parse(text) as ReturnType<typeof bigConfig>;
        const generations = new Set(parsed.components.map((c) => c.attributes.generation));
        assert.equal(generations.size, 1, 'one generation per file');
        assert.equal(parsed.components.length, 4000);
        seen.add(parsed.revision);
      }
    })();
    for (let generation = 1; generation <= 15; generation++) await cache.write(bigConfig(generation));
    writing = false;
    await reader;
    assert.ok(reads > 1 && seen.size > 1, `the reader saw ${seen.size} versions in ${reads} reads`);
    assert.deepEqual(await readdir(dir), ['cached_cloud_config_p.json']);
  });
});
