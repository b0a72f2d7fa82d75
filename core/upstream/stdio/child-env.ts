/**
 * The environment a stdio backend's child gets: exactly its configured `env`, plus PATH and HOME
 * from the gateway's own environment when the configuration does not set them (a command is
 * looked up on that PATH; tools such as `npx` need a HOME). Nothing else of the gateway's
 * environment reaches it: the gateway's own secrets (credentials, tokens in variables) are not
 * the backend's.
 */
import process from 'node:process';

/** The variables passed on from the gateway's environment unless configured. */
export const INHERITED_VARIABLES: readonly string[] = ['PATH', 'HOME'];

export function childEnvironment(configured: Readonly<Record<string, string>>, gateway: NodeJS.ProcessEnv = process.env): Record<string, string> {
  // No prototype: a variable named `__proto__` is a variable like any other.
  const env = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(configured)) env[name] = value;
  for (const name of INHERITED_VARIABLES) {
    const value = gateway[name];
    if (!Object.hasOwn(env, name) && value !== undefined) env[name] = value;
  }
  return env;
}
