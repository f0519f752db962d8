/**
 * Subjects are `<domain>.<entity>.<event>` and each domain has one stream (`billing.>` in
 * `BILLING`). A namespace prefixes both, so installations (or test runs) sharing a NATS server
 * never see each other's events.
 */
export function qualify(namespace: string, subject: string): string {
  return namespace === '' ? subject : `${namespace}.${subject}`;
}

export function streamFor(namespace: string, subject: string): { name: string; subjects: string[] } {
  const domain = subject.split('.')[0];
  if (!domain || !/^[a-z][a-z0-9-]*$/.test(domain)) throw new Error(`subject ${subject} has no domain`);
  const name = domain.toUpperCase().replaceAll('-', '_');
  return {
    name: namespace === '' ? name : `${namespace}_${name}`,
    subjects: [qualify(namespace, `${domain}.>`)],
  };
}

/** The header an event carries naming the deployment that published it (`DEPLOYMENT_ID`). */
export const DEPLOYMENT_HEADER = 'Gw-Deployment';
