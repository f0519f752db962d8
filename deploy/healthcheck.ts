/**
 * Container health check with no dependencies beyond Node itself (it is copied into every image
 * as /opt/gw/healthcheck.ts and used by the Dockerfile's HEALTHCHECK and compose.yaml):
 *
 *   node healthcheck.ts grpc <host:port> [service]   grpc.health.v1.Health/Check answers SERVING
 *   node healthcheck.ts http <url>                   GET answers 2xx
 *   node healthcheck.ts tcp  <host:port>             something accepts connections
 *
 * Exits 0 when healthy, 1 when not (one line on stderr says why), 2 on bad usage. Every check is
 * bounded by HEALTHCHECK_TIMEOUT_MS (default 3000). Kubernetes does not use this file: the chart
 * uses native `grpc:` and `httpGet:` probes.
 *
 * The gRPC check speaks the wire protocol over node:http2 directly (a length-prefixed protobuf
 * message each way), so the image needs no grpc_health_probe binary and no npm package.
 */
import { connect as h2connect } from 'node:http2';
import { connect as tcpConnect } from 'node:net';

const TIMEOUT_MS = Number(process.env.HEALTHCHECK_TIMEOUT_MS ?? 3_000);
/** grpc.health.v1.HealthCheckResponse.ServingStatus */
const STATUS_NAMES = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

/** Protobuf varint at `at`; returns the value and the offset after it. */
function readVarint(buf: Uint8Array, at: number): [number, number] {
  let value = 0;
  let shift = 0;
  for (let i = at; i < buf.length && shift < 35; i++) {
    const byte = buf[i]!;
    value += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return [value, i + 1];
    shift += 7;
  }
  throw new Error('truncated varint');
}

/** `HealthCheckResponse.status` (field 1, varint) from its encoding; absent means UNKNOWN (0). */
function decodeStatus(msg: Uint8Array): number {
  let status = 0;
  let at = 0;
  while (at < msg.length) {
    const [tag, next] = readVarint(msg, at);
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    at = next;
    if (wire === 0) {
      const [value, after] = readVarint(msg, at);
      if (field === 1) status = value;
      at = after;
    } else if (wire === 2) {
      const [len, after] = readVarint(msg, at);
      at = after + len;
    } else {
      throw new Error(`unexpected wire type ${wire}`);
    }
  }
  return status;
}

/** `HealthCheckRequest{service}` framed as a gRPC message (flag byte, 4-byte length, body). */
function requestFrame(service: string): Buffer {
  const name = Buffer.from(service, 'utf8');
  if (name.length > 127) throw new Error('service name too long');
  const body = name.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a, name.length]), name]);
  const header = Buffer.alloc(5);
  header.writeUInt32BE(body.length, 1);
  return Buffer.concat([header, body]);
}

export function checkGrpc(target: string, service = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const session = h2connect(`http://${target}`);
    const timer = setTimeout(() => fail(new Error(`no answer within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
    function finish(): void {
      clearTimeout(timer);
      session.destroy();
    }
    function fail(err: Error): void {
      finish();
      reject(err);
    }
    session.on('error', fail);
    const req = session.request({
      ':method': 'POST',
      ':path': '/grpc.health.v1.Health/Check',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    const chunks: Buffer[] = [];
    let grpcStatus: string | undefined;
    req.on('response', (headers) => {
      if (headers[':status'] !== 200) fail(new Error(`HTTP/2 status ${headers[':status']}`));
      // A trailers-only answer carries grpc-status in the headers.
      if (headers['grpc-status'] !== undefined) grpcStatus = String(headers['grpc-status']);
    });
    req.on('trailers', (trailers) => {
      if (trailers['grpc-status'] !== undefined) grpcStatus = String(trailers['grpc-status']);
    });
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', fail);
    req.on('end', () => {
      finish();
      if (grpcStatus !== '0') return reject(new Error(`grpc-status ${grpcStatus ?? 'missing'}`));
      const frame = Buffer.concat(chunks);
      if (frame.length < 5) return reject(new Error('empty response'));
      const status = decodeStatus(frame.subarray(5, 5 + frame.readUInt32BE(1)));
      const name = STATUS_NAMES[status] ?? String(status);
      if (status === 1) resolve(name);
      else reject(new Error(`status ${name}`));
    });
    req.end(requestFrame(service));
  });
}

export async function checkHttp(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  await res.body?.cancel();
  if (res.status < 200 || res.status > 299) throw new Error(`HTTP ${res.status}`);
  return `HTTP ${res.status}`;
}

export function checkTcp(target: string): Promise<string> {
  const i = target.lastIndexOf(':');
  const host = target.slice(0, i).replace(/^\[|\]$/g, '');
  const port = Number(target.slice(i + 1));
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host, port, timeout: TIMEOUT_MS });
    socket.once('connect', () => {
      socket.destroy();
      resolve('accepting connections');
    });
    socket.once('timeout', () => {
      socket.destroy();
      reject(new Error(`no connection within ${TIMEOUT_MS} ms`));
    });
    socket.once('error', reject);
  });
}

if (import.meta.main) {
  const [mode, target, service] = process.argv.slice(2);
  const check =
    mode === 'grpc' && target ? checkGrpc(target, service)
    : mode === 'http' && target ? checkHttp(target)
    : mode === 'tcp' && target ? checkTcp(target)
    : undefined;
  if (!check) {
    process.stderr.write('usage: healthcheck.ts grpc <host:port> [service] | http <url> | tcp <host:port>\n');
    process.exit(2);
  }
  check.then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`unhealthy: ${mode} ${target}: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
