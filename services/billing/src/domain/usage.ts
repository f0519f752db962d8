import type { EntityManager } from '@mikro-orm/postgresql';
import { requireUuid } from './inputs.ts';

export interface UsageRow {
  request_id: string;
  model: string;
  endpoint: string;
  input_tokens: string;
  output_tokens: string;
  units: string;
  credits: string;
  created_at: Date;
}

/** A key's usage records, newest first. */
export async function usageOfKey(em: EntityManager, keyId: string, limit: number): Promise<UsageRow[]> {
  requireUuid(keyId, 'API key');
  return em.execute<UsageRow[]>(
    `select request_id, model, endpoint, input_tokens::text, output_tokens::text,
            (total_tokens + images + seconds)::text as units, credits::text, created_at
       from usage_record where key_id = ? order by created_at desc, request_id limit ?`,
    [keyId, Math.min(Math.max(limit || 100, 1), 10_000)],
  );
}
