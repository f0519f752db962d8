import { crc32, deflateSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { buildSimulator } from '../../../../services/provider-simulator/src/app.ts';
import { createAdapter } from '../../src/registry.ts';
import type { ProviderAdapter, ProviderConfig, ProviderKind } from '../../src/types.ts';

/** Each simulated provider's base path and key, as the simulator serves them. */
const SIM_PROVIDERS: Record<ProviderKind, { path: string; apiKey: string }> = {
  openai: { path: '/openai/v1', apiKey: 'sim-openai-key' },
  anthropic: { path: '/anthropic', apiKey: 'sim-anthropic-key' },
  google: { path: '/google/v1beta', apiKey: 'sim-google-key' },
  compat: { path: '/compat/v1', apiKey: 'sim-compat-key' },
};

export interface RunningSimulator {
  url: string;
  /** An adapter for the simulated provider of `kind` (closed with the simulator). */
  adapter(kind: ProviderKind, overrides?: Partial<ProviderConfig>): ProviderAdapter;
  /** Calls the simulator's `/_sim` control API. */
  control(method: 'PUT' | 'DELETE' | 'POST', path: string, body?: unknown): Promise<void>;
  close(): Promise<void>;
}

/** The provider simulator on a real port, with short video jobs and a short `timeout` fault cap. */
export async function startSimulator(): Promise<RunningSimulator> {
  const app = buildSimulator({ videoDelayMs: 150, timeoutFaultCapMs: 5_000 });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const adapters: ProviderAdapter[] = [];
  return {
    url,
    adapter(kind, overrides = {}) {
      const sim = SIM_PROVIDERS[kind];
      const adapter = createAdapter({ name: `sim-${kind}`, kind, baseUrl: `${url}${sim.path}`, apiKey: sim.apiKey, ...overrides });
      adapters.push(adapter);
      return adapter;
    },
    async control(method, path, body) {
      const res = await app.inject({ method, url: `/_sim${path}`, ...(body === undefined ? {} : { payload: body as object }) });
      if (res.statusCode >= 300) throw new Error(`simulator control ${method} ${path}: ${res.statusCode} ${res.body}`);
    },
    async close() {
      await Promise.all(adapters.map((adapter) => adapter.close?.()));
      await app.close();
    },
  };
}

function pngChunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** A valid 8x8 grey PNG, as a source image for edits and first frames. */
export function tinyPng(): Uint8Array {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(8, 0);
  header.writeUInt32BE(8, 4);
  header[8] = 8; // bit depth
  header[9] = 0; // greyscale
  const rows = Buffer.alloc(9 * 8, 0x80);
  for (let row = 0; row < 8; row++) rows[row * 9] = 0; // filter byte of each scanline
  return new Uint8Array(
    Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      pngChunk('IHDR', header),
      pngChunk('IDAT', deflateSync(rows)),
      pngChunk('IEND', Buffer.alloc(0)),
    ]),
  );
}

/** Polls a video job until it leaves queued/running. */
export async function settle<T extends { state: string }>(poll: () => Promise<T>, timeoutMs = 5_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const status = await poll();
    if ((status.state !== 'queued' && status.state !== 'running') || Date.now() > until) return status;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
