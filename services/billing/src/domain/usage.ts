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
  client_request_id: string | null;
}

/** A key's usage records, newest first. */
export async function usageOfKey(em: EntityManager, keyId: string, limit: number): Promise<UsageRow[]> {
  requireUuid(keyId, 'API key');
  return em.execute<UsageRow[]>(
    `select u.request_id, u.model, u.endpoint, u.input_tokens::text, u.output_tokens::text,
            (u.total_tokens + u.images + u.seconds)::text as units, u.credits::text, u.created_at, h.client_request_id
       from usage_record u join hold h on h.request_id = u.request_id
      where u.key_id = ? order by u.created_at desc, u.request_id limit ?`,
    [keyId, Math.min(Math.max(limit || 100, 1), 10_000)],
  );
}
