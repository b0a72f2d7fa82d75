/**
 * Just enough of a browser to walk a login headlessly, with a browser's cookie rules that matter
 * here: a cookie is kept per host, name and Path, and sent only to paths under its Path (RFC
 * 6265 §5.1.4), so a flow that relies on a cookie where a browser would not send it fails here
 * too. It follows redirects one by one, answers the gateway's consent page (allow, unless told
 * otherwise) by posting its form as a browser would (with its Origin), and stops at the first
 * URL that `stop` accepts (the client's redirect URI) or at any other page.
 */
export interface Visit {
  /** Every URL visited, in order. */
  readonly trail: string[];
  /** Where it stopped. */
  readonly url: URL;
  /** The status of the last response (0 when it stopped before requesting `url`). */
  readonly status: number;
  readonly body: string;
  /** The headers of the last response (empty when it stopped before requesting `url`). */
  readonly headers: Headers;
}

interface Cookie {
  readonly name: string;
  readonly value: string;
  readonly path: string;
}

/** A form a page asks the user to fill (an identity provider's login): where it posts, and what. */
export interface FilledForm {
  readonly action: URL;
  readonly fields: Record<string, string>;
}

export interface VisitOptions {
  /** The answer to a consent page: allow (default), deny, or none (stop at the page). */
  readonly consent?: 'allow' | 'deny' | 'none';
  /** Fills any other page's form (a login page); null: stop at that page. */
  readonly fill?: (url: URL, body: string) => FilledForm | null;
  readonly maxSteps?: number;
}

/** RFC 6265 §5.1.4: whether a cookie with path `cookiePath` goes with a request for `path`. */
function pathMatches(cookiePath: string, path: string): boolean {
  if (path === cookiePath) return true;
  return path.startsWith(cookiePath) && (cookiePath.endsWith('/') || path[cookiePath.length] === '/');
}

/** RFC 6265 §5.1.4: the default Path of a cookie set by a response to `path`. */
function defaultPath(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash <= 0 ? '/' : path.slice(0, slash);
}

/**
 * The Origin header of a same-origin form POST from a page served with `policy` (Fetch, "append
 * a request Origin header"): `null` under no-referrer, the page's origin under the others (an
 * https page's downgrade rules do not arise for a same-origin post).
 */
function postOrigin(policy: string | null, page: URL): string {
  const last = policy?.split(',').map((p) => p.trim().toLowerCase()).filter((p) => p !== '').pop();
  return last === 'no-referrer' ? 'null' : page.origin;
}

const CONSENT_FORM = /<form method="post" action="([^"]+)"><input type="hidden" name="token" value="([^"]+)">/;

export class Browser {
  readonly #jars = new Map<string, Map<string, Cookie>>();
  /** Sent with every request (an `x-forwarded-for` through a trusted proxy: another client address). */
  readonly #headers: Record<string, string>;

  constructor(headers: Record<string, string> = {}) {
    this.#headers = headers;
  }

  async visit(start: string, stop: (url: URL) => boolean, options: VisitOptions = {}): Promise<Visit> {
    const trail: string[] = [];
    let url = new URL(start);
    let post: { body: string; origin: string } | null = null;
    for (let step = 0; step < (options.maxSteps ?? 25); step++) {
      trail.push(url.href);
      if (stop(url)) return { trail, url, status: 0, body: '', headers: new Headers() };
      const headers: Record<string, string> = { ...this.#headers };
      const cookie = this.#cookiesFor(url);
      if (cookie.length > 0) headers.cookie = cookie;
      if (post !== null) {
        headers['content-type'] = 'application/x-www-form-urlencoded';
        headers.origin = post.origin;
      }
      const res = await fetch(url, { method: post === null ? 'GET' : 'POST', redirect: 'manual', headers, ...(post === null ? {} : { body: post.body }) });
      post = null;
      this.#keep(url, res.headers.getSetCookie());
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location !== null) {
        await res.arrayBuffer();
        url = new URL(location, url);
        continue;
      }
      const body = await res.text();
      const form = res.status === 200 ? CONSENT_FORM.exec(body) : null;
      // A form's POST carries the Origin a browser would give it under the page's Referrer-Policy.
      const origin = postOrigin(res.headers.get('referrer-policy'), url);
      const consent = options.consent ?? 'allow';
      const filled = form === null && res.status === 200 ? (options.fill?.(url, body) ?? null) : null;
      if (filled !== null) {
        post = { body: new URLSearchParams(filled.fields).toString(), origin };
        url = filled.action;
        continue;
      }
      if (form === null || consent === 'none') return { trail, url, status: res.status, body, headers: res.headers };
      post = { body: new URLSearchParams({ token: form[2]!.replaceAll('&amp;', '&'), decision: consent }).toString(), origin };
      url = new URL(form[1]!.replaceAll('&amp;', '&'), url);
    }
    throw new Error(`no end after ${options.maxSteps ?? 25} steps: ${trail.join(' → ')}`);
  }

  /** A form POST with this browser's cookies for `url` (and the given Origin), not followed. */
  async post(url: URL, form: Record<string, string>, origin: string): Promise<Response> {
    const cookie = this.#cookiesFor(url);
    return fetch(url, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...this.#headers, 'content-type': 'application/x-www-form-urlencoded', origin, ...(cookie.length > 0 ? { cookie } : {}) },
      body: new URLSearchParams(form).toString(),
    });
  }

  /** The Cookie header this browser sends to `url` (a flood that replays a browser's requests). */
  cookieHeader(url: URL): string {
    return this.#cookiesFor(url);
  }

  #cookiesFor(url: URL): string {
    const jar = this.#jars.get(url.host);
    if (jar === undefined) return '';
    return [...jar.values()]
      .filter((c) => pathMatches(c.path, url.pathname))
      .sort((a, b) => b.path.length - a.path.length)
      .map((c) => `${c.name}=${c.value}`)
      .join('; ');
  }

  #keep(url: URL, lines: string[]): void {
    let jar = this.#jars.get(url.host);
    if (jar === undefined) this.#jars.set(url.host, (jar = new Map()));
    for (const line of lines) {
      const [pair, ...attributes] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const pathAttribute = attributes.map((a) => a.trim()).find((a) => /^path=/i.test(a));
      const path = pathAttribute?.slice(5) || defaultPath(url.pathname);
      const expired = attributes.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a) || /^\s*max-age=0\b/i.test(a)) || value === '';
      const key = `${name};${path}`;
      if (expired) jar.delete(key);
      else jar.set(key, { name, value, path });
    }
  }
}
