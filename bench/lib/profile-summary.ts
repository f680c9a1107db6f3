import { readFile } from 'node:fs/promises';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileEntry {
  name: string;
  ms: number;
  percent: number;
}

export interface ProfileSummary {
  totalMs: number;
  /** Self time grouped by package / source file (where the CPU actually burns). */
  selfByArea: ProfileEntry[];
  /** Functions with the most self time. */
  selfByFunction: ProfileEntry[];
  /** Time spent inside (including callees) the heaviest functions of the cloud's own code and key libraries. */
  inclusive: ProfileEntry[];
}

/** Where a script URL belongs: an npm package, a file of the cloud, or Node's internals. */
function areaOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : `(native) ${functionName || 'anonymous'}`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1] as string;
  const own = /\/(apps|packages|bench)\/(.+)$/.exec(url);
  if (own) return `${own[1]}/${own[2]}`;
  if (url.startsWith('node:')) return url;
  return url;
}

function frameName(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url ? `${areaOf(url, functionName)}:${lineNumber + 1}` : '';
  return `${functionName || '(anonymous)'}${where ? ` ${where}` : ''}`;
}

function top(map: Map<string, number>, total: number, count: number): ProfileEntry[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, us]) => ({
      name,
      ms: Math.round(us / 1000),
      percent: Math.round((us / total) * 1000) / 10,
    }));
}

export async function summarizeProfile(file: string, count = 25): Promise<ProfileSummary> {
  const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const selfUs = new Map<number, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
    total += delta;
  });
  const byArea = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id) as ProfileNode;
    const area = areaOf(node.callFrame.url, node.callFrame.functionName);
    byArea.set(area, (byArea.get(area) ?? 0) + us);
    const name = frameName(node);
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at) as ProfileNode;
      const frameLabel = frameName(frame);
      if (seen.has(frameLabel)) continue;
      seen.add(frameLabel);
      const url = frame.callFrame.url;
      const interesting =
        /apps\/cloud\/src/.test(url) ||
        /@bufbuild\/protobuf\/dist\/esm\/(from-binary|to-binary|wire|reflect\/reflect|wkt)/.test(url) ||
        /node_modules\/pg(-protocol)?\//.test(url) ||
        (frame.callFrame.url === '' && /^(stringify|parse)$/.test(frame.callFrame.functionName));
      if (interesting) inclusive.set(frameLabel, (inclusive.get(frameLabel) ?? 0) + us);
    }
  }
  return {
    totalMs: Math.round(total / 1000),
    selfByArea: top(byArea, total, count),
    selfByFunction: top(byFunction, total, count),
    inclusive: top(inclusive, total, count),
  };
}

export function printProfile(summary: ProfileSummary): void {
  const print = (title: string, entries: ProfileEntry[]) => {
    console.log(`\n  ${title}`);
    for (const e of entries)
      console.log(`    ${String(e.percent).padStart(5)}%  ${String(e.ms).padStart(7)} ms  ${e.name}`);
  };
  console.log(`\nserver CPU profile (${summary.totalMs} ms sampled)`);
  print('self time by area', summary.selfByArea);
  print('self time by function', summary.selfByFunction);
  print('inclusive time (cloud code, protobuf, pg, JSON)', summary.inclusive);
}
