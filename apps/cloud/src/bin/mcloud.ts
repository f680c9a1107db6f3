#!/usr/bin/env -S node --max-semi-space-size=4
// V8's young generation is capped at 4 MiB per semi-space (the default grows to 16 MiB on this class of
// machine). Streaming uploads turn over their 64 KiB chunk buffers far faster than they fill the young
// generation, so with 16 MiB the dead chunks pile up (~60-90 MiB of RSS per 100 MiB upload) until the
// external-memory limit forces a GC; with 4 MiB scavenges free them as they go (~25 MiB) at no measured
// CPU cost (bench/streaming-upload.ts). `npm start` passes the same flag; keep the two in step.
import { runCli } from '../cli/run-cli.ts';

process.exitCode = await runCli(process.argv.slice(2));
