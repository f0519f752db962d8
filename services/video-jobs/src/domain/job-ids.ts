import { randomBytes } from 'node:crypto';

/** The public job id form: `vidjob_` and 128 random bits in hex. Also the job's charge id in billing. */
export const JOB_ID = /^vidjob_[0-9a-f]{32}$/;

export function newJobId(): string {
  return `vidjob_${randomBytes(16).toString('hex')}`;
}
