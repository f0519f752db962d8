import { renameSync, writeFileSync } from 'node:fs';

/** Writes the ready file atomically, so a reader never sees half an address. */
export function writeReadyFile(path: string | undefined, address: string): void {
  if (!path) return;
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, address);
  renameSync(tmp, path);
}
