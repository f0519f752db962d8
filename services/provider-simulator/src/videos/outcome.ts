import type { Fault } from '../faults.ts';
import type { AspectRatio, VideoOutcome } from './jobs.ts';

export function outcomeOf(fault: Fault | undefined): VideoOutcome {
  switch (fault?.kind) {
    case 'video_failed':
      return 'failed';
    case 'video_safety':
      return 'safety';
    case 'video_lost':
      return 'lost';
    default:
      return 'success';
  }
}

export const MAX_VIDEO_SECONDS = 60;

export function aspectOfSize(width: number, height: number): AspectRatio {
  return width >= height ? '16:9' : '9:16';
}
