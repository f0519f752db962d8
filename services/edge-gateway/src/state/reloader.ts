/**
 * Wraps a reload so that bursts of change events cost at most one reload in flight plus one
 * queued behind it: the queued one still sees every change made before it started.
 */
export function coalescedReload(reload: () => Promise<void>, onError: (err: unknown) => void): () => Promise<void> {
  let running: Promise<void> | null = null;
  let again = false;
  const run = async (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await reload();
        } catch (err) {
          onError(err);
        }
      } while (again);
    })().finally(() => {
      running = null;
    });
    return running;
  };
  return run;
}
