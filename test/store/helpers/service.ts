/**
 * The rule for tests that need a service or a binary (Redis, redis-server): when it is absent
 * the suite is skipped with the reason printed, except under CI=true, where it is a failure.
 */
export interface Skip {
  readonly skip: string;
}

/** Returns `{ skip }` (printing why), or throws under CI=true. */
export function unavailable(suite: string, reason: string): Skip {
  if (process.env.CI === 'true') throw new Error(`${suite}: ${reason} (cannot be skipped under CI=true)`);
  process.stdout.write(`# skipping ${suite}: ${reason}\n`);
  return { skip: reason };
}

/** `it` callbacks use this: skip the test with the reason when the suite's service is absent. */
export function skipIf(t: { skip(message?: string): void }, skip: Skip | null): boolean {
  if (skip === null) return false;
  t.skip(skip.skip);
  return true;
}
