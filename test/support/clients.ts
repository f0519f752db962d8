import { request } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import { billingV1, catalogV1, createClient } from '@gw/contracts';
import OpenAI from 'openai';
import { DEMO_MODELS } from '../../scripts/demo-models.ts';
import type { RunningSystem } from '../../scripts/system.ts';

/** The official OpenAI SDK pointed at the gateway, with its own retries off so tests see every answer. */
export function openaiClient(system: RunningSystem, apiKey: string): OpenAI {
  return new OpenAI({ baseURL: system.baseUrl, apiKey, maxRetries: 0, timeout: 30_000 });
}

/**
 * The official Anthropic SDK pointed at the gateway. It appends `/v1/...` itself, so its base is the
 * origin; our keys travel as `Authorization: Bearer` (its `authToken`), as on every endpoint.
 */
export function anthropicClient(system: RunningSystem, apiKey: string): Anthropic {
  return new Anthropic({ baseURL: new URL(system.baseUrl).origin, authToken: apiKey, apiKey: null, maxRetries: 0, timeout: 30_000 });
}

/**
 * Billing's three services at the system's billing address as one client: a whole-system test acts
 * as the gateway, an operator and a member alike (BillingService, BillingAdminService,
 * AccountService; no rpc name is in two of them).
 */
export function billingClient(system: Pick<RunningSystem, 'billingAddr'>) {
  const parts = [
    createClient(billingV1.BillingService, system.billingAddr),
    createClient(billingV1.BillingAdminService, system.billingAddr),
    createClient(billingV1.AccountService, system.billingAddr),
  ] as const;
  const [hot, admin, account] = parts;
  return {
    ...hot,
    ...admin,
    ...account,
    close() {
      for (const part of parts) part.close();
    },
  };
}

export function catalogClient(system: RunningSystem) {
  return createClient(catalogV1.CatalogService, system.catalogAddr);
}

/** Puts the demo models (served by the simulator) in the system's catalog. */
export async function seedDemoModels(system: RunningSystem): Promise<void> {
  const catalog = catalogClient(system);
  try {
    for (const model of DEMO_MODELS) await catalog.upsertModel({ model });
  } finally {
    catalog.close();
  }
}

export async function balanceOf(system: RunningSystem, accountId: string): Promise<number> {
  const billing = billingClient(system);
  try {
    return Number((await billing.getWallet({ accountId })).balance);
  } finally {
    billing.close();
  }
}

/** Waits until the gateway lists every id (its catalog snapshot is reloaded by events). */
export async function waitForListing(system: RunningSystem, apiKey: string, ids: string[], timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let listed: string[] = [];
  while (Date.now() < deadline) {
    const res = await fetch(`${system.baseUrl}/models`, { headers: { authorization: `Bearer ${apiKey}` } });
    if (res.ok) {
      listed = ((await res.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id);
      if (ids.every((id) => listed.includes(id))) return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`models not listed in time: ${ids.filter((id) => !listed.includes(id)).join(', ')}`);
}

/**
 * A POST that declares `declaredBytes` of body but sends only `firstBytes`: it shows that a body
 * over a route's limit is refused from its declared length, before being read. (Sending a real
 * oversized body races the server's early answer and can end in a broken pipe instead.)
 */
export function postDeclaredLength(url: string, apiKey: string, declaredBytes: number, firstBytes: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'content-length': String(declaredBytes) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() });
        });
      },
    );
    req.on('error', reject);
    req.write(firstBytes);
  });
}
