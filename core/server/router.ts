/**
 * The router for routes plugins serve themselves (well-known documents, OAuth endpoints, the
 * registry API). Static paths are one Map lookup; paths with `:param` segments are matched
 * segment by segment, in registration order. A path that exists under another method is a 405
 * with `Allow`, not a 404.
 */
import { GatewayError, untrusted } from '../base/errors.ts';

const CONTROL = /[\x00-\x1f\x7f]/;
import type { HttpMethod, RouteDef } from '../plugin-api/plugin.ts';
import type { RouteMetrics } from '../observe/metrics.ts';

export interface Route {
  readonly def: RouteDef;
  readonly plugin: string;
  /** The pattern, used as the metrics label. */
  readonly pattern: string;
  readonly auth: boolean;
  readonly metrics: RouteMetrics;
}

interface PatternEntry {
  readonly segments: readonly string[];
  readonly byMethod: Map<string, Route>;
}

export interface RouteMatch {
  readonly route: Route;
  readonly params: Record<string, string> | null;
}

function methodsOf(def: RouteDef): readonly HttpMethod[] {
  return typeof def.method === 'string' ? [def.method] : def.method;
}

export class Router {
  readonly #static = new Map<string, Map<string, Route>>();
  readonly #patterns: PatternEntry[] = [];

  add(def: RouteDef, plugin: string, metrics: RouteMetrics): void {
    if (!def.path.startsWith('/')) throw new Error(`plugin ${plugin}: route path "${def.path}" must start with /`);
    const route: Route = { def, plugin, pattern: def.path, auth: def.auth !== false, metrics };
    let byMethod: Map<string, Route>;
    if (def.path.includes('/:')) {
      const segments = def.path.split('/');
      let entry = this.#patterns.find((p) => p.segments.join('/') === segments.join('/'));
      if (entry === undefined) {
        entry = { segments, byMethod: new Map() };
        this.#patterns.push(entry);
      }
      byMethod = entry.byMethod;
    } else {
      byMethod = this.#static.get(def.path) ?? new Map();
      this.#static.set(def.path, byMethod);
    }
    for (const method of methodsOf(def)) {
      if (byMethod.has(method)) throw new Error(`plugin ${plugin}: ${method} ${def.path} is already served by ${byMethod.get(method)!.plugin}`);
      byMethod.set(method, route);
      if (method === 'GET' && !byMethod.has('HEAD')) byMethod.set('HEAD', route);
    }
  }

  /** The route for `method path`, null when no route has this path; throws 405 when only the method differs. */
  find(method: string, path: string): RouteMatch | null {
    const byMethod = this.#static.get(path);
    if (byMethod !== undefined) return { route: pick(byMethod, method), params: null };
    if (this.#patterns.length === 0) return null;
    const parts = path.split('/');
    for (const entry of this.#patterns) {
      const params = matchSegments(entry.segments, parts);
      if (params !== null) return { route: pick(entry.byMethod, method), params };
    }
    return null;
  }
}

function pick(byMethod: Map<string, Route>, method: string): Route {
  const route = byMethod.get(method);
  if (route !== undefined) return route;
  const allow = [...byMethod.keys()].join(', ');
  throw new GatewayError('method_not_allowed', `method ${method} is not allowed here (allowed: ${allow})`, {
    headers: { allow },
  });
}

function matchSegments(segments: readonly string[], parts: readonly string[]): Record<string, string> | null {
  if (segments.length !== parts.length) return null;
  let params: Record<string, string> | null = null;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    const part = parts[i]!;
    if (segment.startsWith(':')) {
      if (part.length === 0) return null;
      let value: string;
      try {
        value = decodeURIComponent(part);
      } catch {
        throw new GatewayError('invalid_request', `path segment ${untrusted(part)} is not valid percent-encoding`);
      }
      // No name, version or id has a control character; a database would refuse a NUL outright.
      if (CONTROL.test(value)) throw new GatewayError('invalid_request', `path segment ${untrusted(part)} decodes to a control character (such as %00)`);
      (params ??= {})[segment.slice(1)] = value;
    } else if (segment !== part) {
      return null;
    }
  }
  return params ?? {};
}
