import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { Session } from 'node:inspector/promises';
import { getHeapSnapshot } from 'node:v8';
import type { MachineStatus } from '../machine-host.ts';
import { formatResourceName } from '../resources/resource-name.ts';

type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

export const maxProfileSeconds = 60;

/**
 * `-webprofile` / `enable_web_profile` (machine-runtime.md A6): the profiler on the web port, as Node
 * equivalents of Go's pprof. Only for callers on this machine (a heap snapshot holds secrets).
 * - `/debug/pprof/` lists the profiles;
 * - `/debug/pprof/profile?seconds=N` (1–60, default 30): a V8 CPU profile (`.cpuprofile`, open it in
 *   Chrome DevTools);
 * - `/debug/pprof/heap`: a V8 heap snapshot (`.heapsnapshot`);
 * - `/debug/graph`: the resource graph as Graphviz DOT (states; edges from `depends_on`).
 * Returns false for other paths.
 */
export function handleDebugRoutes(
  path: string,
  req: Request,
  res: Response,
  graph: () => { status: MachineStatus; dependsOn: ReadonlyMap<string, readonly string[]> },
): boolean {
  if (path === '/debug/pprof' || path === '/debug/pprof/') {
    send(
      res,
      200,
      'text/plain; charset=utf-8',
      'profiles:\n  /debug/pprof/profile?seconds=30\n  /debug/pprof/heap\n  /debug/graph\n',
    );
  } else if (path === '/debug/pprof/profile') {
    const seconds = Number(new URL(req.url ?? '', 'http://x').searchParams.get('seconds') ?? '30');
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > maxProfileSeconds) {
      send(
        res,
        400,
        'text/plain',
        `seconds must be an integer from 1 to ${maxProfileSeconds} (got ${seconds})\n`,
      );
    } else {
      cpuProfile(seconds * 1000).then(
        (profile) => send(res, 200, 'application/json', profile, 'machine-server.cpuprofile'),
        (error: unknown) => send(res, 500, 'text/plain', `CPU profile failed: ${String(error)}\n`),
      );
    }
  } else if (path === '/debug/pprof/heap') {
    (res as ServerResponse).writeHead(200, {
      'content-type': 'application/json',
      'content-disposition': 'attachment; filename="machine-server.heapsnapshot"',
    });
    getHeapSnapshot().pipe(res as ServerResponse);
  } else if (path === '/debug/graph') {
    const { status, dependsOn } = graph();
    send(res, 200, 'text/vnd.graphviz; charset=utf-8', graphDot(status, dependsOn));
  } else {
    return false;
  }
  return true;
}

async function cpuProfile(durationMs: number): Promise<string> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
    await new Promise((resolve) => setTimeout(resolve, durationMs));
    const { profile } = await session.post('Profiler.stop');
    return JSON.stringify(profile);
  } finally {
    session.disconnect();
  }
}

/** DOT of the resource graph: one node per resource (colour by state), an edge per explicit dependency. */
export function graphDot(status: MachineStatus, dependsOn: ReadonlyMap<string, readonly string[]>): string {
  const colour: Record<string, string> = { ready: 'green', unhealthy: 'red', configuring: 'orange' };
  const lines = ['digraph resources {'];
  for (const resource of status.resources) {
    const name = formatResourceName(resource.name);
    const label = resource.error
      ? `${name}\n${resource.state}: ${resource.error}`
      : `${name}\n${resource.state}`;
    lines.push(
      `  ${dotString(name)} [label=${dotString(label)}, color=${colour[resource.state] ?? 'gray'}];`,
    );
  }
  for (const [from, targets] of dependsOn) {
    for (const to of targets) lines.push(`  ${dotString(from)} -> ${dotString(to)};`);
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

/** A DOT quoted string: quotes and backslashes escaped, newlines as DOT's `\n`. */
function dotString(text: string): string {
  return `"${text.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`;
}

function send(res: Response, status: number, contentType: string, body: string, filename?: string): void {
  const headers: Record<string, string> = { 'content-type': contentType };
  if (filename) headers['content-disposition'] = `attachment; filename="${filename}"`;
  (res as ServerResponse).writeHead(status, headers).end(body);
}
