import { create, toBinary } from '@bufbuild/protobuf';
import { randomUUID } from 'node:crypto';
import { eventsV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { enqueueEvent } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';

export const SWITCH_CHANGED_SUBJECT = 'billing.switch.changed';

export interface Switches {
  maintenance: boolean;
  aiRequestsDisabled: boolean;
}

export async function getSwitches(em: EntityManager): Promise<Switches> {
  const rows = await em.execute<{ name: string; on: boolean }[]>('select name, "on" from switch');
  const on = (name: string) => rows.find((r) => r.name === name)?.on;
  return { maintenance: on('maintenance') ?? false, aiRequestsDisabled: on('ai_requests') === false };
}

/**
 * Sets a switch and, in the same transaction, queues the event every gateway replica applies
 * within a second. `ai_requests` on means AI requests are allowed.
 */
export async function setSwitch(em: EntityManager, name: string, on: boolean): Promise<Switches> {
  if (name !== 'maintenance' && name !== 'ai_requests') {
    throw new GatewayError('invalid_request', 'A switch is `maintenance` or `ai_requests`.');
  }
  return em.transactional(async (tx) => {
    await tx.execute(
      `insert into switch (name, "on", updated_at) values (?, ?, now())
       on conflict (name) do update set "on" = excluded."on", updated_at = now()`,
      [name, on],
    );
    const switches = await getSwitches(tx);
    const event = create(eventsV1.SwitchesChangedSchema, {
      eventId: randomUUID(),
      maintenance: switches.maintenance,
      aiRequestsDisabled: switches.aiRequestsDisabled,
    });
    enqueueEvent(tx, { subject: SWITCH_CHANGED_SUBJECT, payload: toBinary(eventsV1.SwitchesChangedSchema, event), msgId: event.eventId });
    await tx.flush();
    return switches;
  });
}
