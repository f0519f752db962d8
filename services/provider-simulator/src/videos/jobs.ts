import { newId } from '../ids.ts';
import type { Provider } from '../types.ts';

export type AspectRatio = '16:9' | '9:16';

/** How a job ends: decided at creation (from a fault), revealed once its delay has passed. */
export type VideoOutcome = 'success' | 'failed' | 'safety' | 'lost';

export interface VideoJob {
  id: string;
  provider: Provider;
  model: string;
  createdAtMs: number;
  delayMs: number;
  seconds: number;
  aspectRatio: AspectRatio;
  /** Sora `size` as requested (`1280x720`...); Veo jobs derive it from the aspect ratio. */
  size: string;
  prompt: string;
  outcome: VideoOutcome;
}

export type VideoPhase = 'queued' | 'running' | 'completed' | 'failed';

/**
 * A job's state is a pure function of the time elapsed since creation, so no timers run per job:
 * queued for the first third of the delay, running until the delay has passed, then terminal.
 */
export function phaseOf(job: VideoJob, nowMs: number): { phase: VideoPhase; progress: number } {
  const elapsed = nowMs - job.createdAtMs;
  if (elapsed >= job.delayMs) {
    return job.outcome === 'success' ? { phase: 'completed', progress: 100 } : { phase: 'failed', progress: 100 };
  }
  const progress = Math.min(99, Math.floor((elapsed / Math.max(1, job.delayMs)) * 100));
  return elapsed < job.delayMs / 3 ? { phase: 'queued', progress: 0 } : { phase: 'running', progress };
}

export function completedAtMs(job: VideoJob): number {
  return job.createdAtMs + job.delayMs;
}

const MAX_JOBS = 10_000;

/** In-memory jobs, oldest evicted first once the cap is reached. */
export class VideoJobStore {
  private readonly jobs = new Map<string, VideoJob>();

  create(fields: Omit<VideoJob, 'id' | 'createdAtMs'>, idPrefix: string): VideoJob {
    const job: VideoJob = { ...fields, id: newId(idPrefix), createdAtMs: Date.now() };
    this.jobs.set(job.id, job);
    if (this.jobs.size > MAX_JOBS) {
      const oldest = this.jobs.keys().next();
      if (!oldest.done) this.jobs.delete(oldest.value);
    }
    return job;
  }

  /** The job, unless unknown or lost (a lost job answers 404 like an unknown one). */
  get(id: string, provider: Provider): VideoJob | undefined {
    const job = this.jobs.get(id);
    return job && job.provider === provider && job.outcome !== 'lost' ? job : undefined;
  }

  delete(id: string): boolean {
    return this.jobs.delete(id);
  }

  clear(): void {
    this.jobs.clear();
  }
}
