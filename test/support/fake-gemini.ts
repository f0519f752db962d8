/**
 * A scripted Gemini API (model listing, `streamGenerateContent?alt=sse`, `generateContent`) for
 * whole-system tests of what the provider simulator cannot send: tens of thousands of deltas, a
 * connection that breaks after the final chunk, bytes split mid-character.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

type Chunk = Record<string, unknown>;
export interface Script {
  /** SSE chunks to send. */
  chunks: Chunk[];
  /** Write the SSE bytes in pieces of this many bytes (splits multi-byte characters). */
  pieceBytes?: number;
  /** Destroy the socket after the last chunk instead of ending the response cleanly. */
  breakAfter?: boolean;
  /** ms to wait before the chunk with this index. */
  pauseBefore?: { index: number; ms: number };
}

export const usage = (prompt: number, candidates: number, extra: Chunk = {}): Chunk => ({
  promptTokenCount: prompt,
  candidatesTokenCount: candidates,
  totalTokenCount: prompt + candidates + Number(extra.thoughtsTokenCount ?? 0) + Number(extra.toolUsePromptTokenCount ?? 0),
  ...extra,
});
export const textChunk = (text: string, extra: Chunk = {}): Chunk => ({
  candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0, ...(extra.finishReason ? { finishReason: extra.finishReason } : {}) }],
  ...(extra.usageMetadata ? { usageMetadata: extra.usageMetadata } : {}),
  modelVersion: 'gemini-sim-flash',
  responseId: 'r1',
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startFakeGemini(scriptFor: (prompt: string, body: Record<string, unknown>) => Script): Promise<{ url: string; server: Server; requests: Array<Record<string, unknown>> }> {
  const requests: Array<Record<string, unknown>> = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', async () => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (req.method === 'GET' && url.pathname.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ models: [{ name: 'models/gemini-sim-flash', supportedGenerationMethods: ['generateContent', 'streamGenerateContent', 'countTokens'] }] }));
        return;
      }
      const body = JSON.parse(Buffer.concat(parts).toString('utf8') || '{}') as Record<string, unknown>;
      requests.push(body);
      const contents = (body.contents as Array<{ parts: Array<{ text?: string }> }>) ?? [];
      const prompt = contents.at(-1)?.parts.map((p) => p.text ?? '').join('') ?? '';
      const script = scriptFor(prompt, body);
      if (url.pathname.endsWith(':generateContent')) {
        // Whole answer: the chunks merged.
        const text = script.chunks.flatMap((c) => ((c.candidates as Array<{ content?: { parts?: Array<{ text?: string }> } }>)?.[0]?.content?.parts ?? []).map((p) => p.text ?? '')).join('');
        const last = script.chunks.at(-1)!;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ...textChunk(text, { finishReason: 'STOP', usageMetadata: last.usageMetadata }) }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < script.chunks.length; i++) {
        if (script.pauseBefore?.index === i) await sleep(script.pauseBefore.ms);
        const bytes = Buffer.from(`data: ${JSON.stringify(script.chunks[i])}\r\n\r\n`, 'utf8');
        if (script.pieceBytes) {
          for (let off = 0; off < bytes.length; off += script.pieceBytes) {
            res.write(bytes.subarray(off, off + script.pieceBytes));
            await sleep(1);
          }
        } else if (!res.write(bytes)) await new Promise((r) => res.once('drain', r));
      }
      if (script.breakAfter) {
        await sleep(50);
        res.socket?.destroy();
      } else res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, requests };
}
