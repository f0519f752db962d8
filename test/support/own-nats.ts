import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { portOpen } from '../../scripts/infra.ts';

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

const NATS_BIN = spawnSync('sh', ['-c', 'command -v nats-server || ls /usr/sbin/nats-server'], { encoding: 'utf8' }).stdout.trim().split('\n')[0];

/**
 * A NATS server (JetStream on) of the test's own, so the test can stop it (an outage) and start
 * it again on the same port with the same store. Only this process is ever stopped, never the
 * machine's shared server.
 */
export class OwnNats {
  child: ChildProcess | null = null;
  readonly store = mkdtempSync(join(tmpdir(), 'gw-nats-'));
  readonly port: number;

  constructor(port: number) {
    this.port = port;
  }

  static async onFreePort(): Promise<OwnNats> {
    return new OwnNats(await freePort());
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.child = spawn(NATS_BIN!, ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', this.store], { stdio: 'ignore' });
    for (let i = 0; i < 100; i++) {
      if (await portOpen('127.0.0.1', this.port)) return;
      await sleep(100);
    }
    throw new Error('nats-server did not start');
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((done) => {
      child.once('exit', () => done());
      child.kill('SIGTERM');
    });
  }
}
