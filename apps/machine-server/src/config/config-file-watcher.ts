/**
 * Watches a local config file (A1.1): reacts to writes, removals and atomic saves (rename over the
 * file) by watching its directory, debounced 500 ms, and reports only when the bytes changed.
 */
import { watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

export interface ConfigFileWatcher {
  close(): void;
}

export function watchConfigFile(
  file: string,
  initialText: string,
  onChange: (text: string) => void,
  debounceMs = 500,
): ConfigFileWatcher {
  let last = initialText;
  let timer: NodeJS.Timeout | undefined;
  const base = path.basename(file);
  const check = async () => {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      return; // removed: wait for it to come back
    }
    if (text === last) return;
    last = text;
    onChange(text);
  };
  const watcher = watch(path.dirname(file), { persistent: false }, (_event, name) => {
    if (name !== null && name !== base) return;
    clearTimeout(timer);
    timer = setTimeout(() => void check(), debounceMs);
  });
  timer = setTimeout(() => void check(), debounceMs);
  return {
    close() {
      clearTimeout(timer);
      watcher.close();
    },
  };
}
