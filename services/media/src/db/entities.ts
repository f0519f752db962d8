import { defineEntity, p } from '@mikro-orm/postgresql';

// Media's tables, all in the `media` schema. Status changes are conditional updates (see
// domain/image-jobs.ts); the constraints live in the migrations. Idempotency-Key claims are in
// `idempotency_claim`, read and written by service-kit's claim functions (no entity).

/**
 * One image generation or edit. `running` from BeginImageJob until FinishImageJob (`succeeded`)
 * or AbandonImageJob (`abandoned`, its Idempotency-Key free again). `expires_at` is when the row
 * may be purged: 24 hours after it began, then 24 hours after it finished.
 */
const ImageJobSchema = defineEntity({
  name: 'ImageJob',
  tableName: 'image_job',
  properties: {
    id: p.text().primary(),
    accountId: p.text(),
    operation: p.text(),
    /**
     * The key the job was begun with (its result is kept only then). With `bodyHash`, also what the
     * previous release claimed keys by (its unique index): written until a later release drops them.
     */
    idempotencyKey: p.text().nullable(),
    bodyHash: p.blob().nullable(),
    status: p.text(),
    provider: p.text().nullable(),
    creditCharged: p.bigint().nullable(),
    balanceAfter: p.bigint().nullable(),
    createdAt: p.datetime(),
    /** Set when RunImageJob claims the job, so the provider is called at most once per job. */
    runStartedAt: p.datetime().nullable(),
    completedAt: p.datetime().nullable(),
    expiresAt: p.datetime(),
    /** While `running`: the claim's lease, extended while media runs the job; ended, the job is an orphan. */
    leaseUntil: p.datetime().nullable(),
  },
});
export class ImageJob extends ImageJobSchema.class {}
ImageJobSchema.setClass(ImageJob);

/** One produced image of a job that has an Idempotency-Key (only those can be fetched again). */
const ImageJobImageSchema = defineEntity({
  name: 'ImageJobImage',
  tableName: 'image_job_image',
  properties: {
    jobId: p.text().primary(),
    position: p.integer().primary(),
    mimeType: p.text(),
    data: p.blob(),
  },
});
export class ImageJobImage extends ImageJobImageSchema.class {}
ImageJobImageSchema.setClass(ImageJobImage);

export const mediaEntities = [ImageJob, ImageJobImage];
