/**
 * The console and file line (machine-runtime.md A4.1), tab separated:
 * `<UTC time, ms>  <LEVEL>  <logger name>  <caller dir/file:line>  <message>  [<fields as JSON>]`.
 * The machine-agent parses exactly this shape. Without a known caller the column is left out.
 */
import { type LogEntry, trimmedCaller } from './log-entry.ts';

export function formatLogLine(entry: LogEntry): string {
  const columns = [new Date(entry.timeMs).toISOString(), entry.level.toUpperCase(), entry.loggerName];
  if (entry.caller) columns.push(trimmedCaller(entry.caller));
  columns.push(entry.message);
  if (Object.keys(entry.fields).length > 0) columns.push(JSON.stringify(entry.fields));
  let line = columns.join('\t');
  if (entry.stack) line += `\n${entry.stack}`;
  return line;
}
