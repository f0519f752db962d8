import { defineEntity, p } from '@mikro-orm/postgresql';

/**
 * What the provider needs to start a job: the prompt and the frames. Kept apart from the job and
 * deleted once the job is submitted (or abandoned), so prompts and images are stored only as long
 * as a restart could need them to submit.
 */
const VideoJobInputSchema = defineEntity({
  name: 'VideoJobInput',
  tableName: 'video_job_input',
  properties: {
    jobId: p.text().primary(),
    prompt: p.text(),
    image: p.blob().nullable(),
    imageMime: p.text().nullable(),
    lastFrame: p.blob().nullable(),
    lastFrameMime: p.text().nullable(),
  },
});
export class VideoJobInput extends VideoJobInputSchema.class {}
VideoJobInputSchema.setClass(VideoJobInput);
