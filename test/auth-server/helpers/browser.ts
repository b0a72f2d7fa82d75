/**
 * Just enough of a browser to walk a login headlessly: it follows redirects one by one, keeps
 * each host's cookies (by name; paths and expiry beyond deletion are ignored), and stops at the
 * first URL that `stop` accepts (the client's redirect URI) or at any page that is not a redirect.
 */
export interface Visit {
  /** Every URL visited, in order. */
  readonly trail: string[];
  /** Where it stopped. */
  readonly url: URL;
  /** The status of the last response (0 when it stopped before requesting `url`). */
  readonly status: number;
  readonly body: string;
}

export class Browser {
  readonly #jars = new Map<string, Map<string, string>>();

  async visit(start: string, stop: (url: URL) => boolean, maxSteps = 20): Promise<Visit> {
    const trail: string[] = [];
    let url = new URL(start);
    for (let step = 0; step < maxSteps; step++) {
      trail.push(url.href);
      if (stop(url)) return { trail, url, status: 0, body: '' };
      const jar = this.#jar(url.host);
      const cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
      const res = await fetch(url, { redirect: 'manual', headers: cookie.length > 0 ? { cookie } : {} });
      for (const line of res.headers.getSetCookie()) {
        const [pair, ...attributes] = line.split(';');
        const eq = pair!.indexOf('=');
        const name = pair!.slice(0, eq).trim();
        const value = pair!.slice(eq + 1).trim();
        const expired = attributes.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a)) || value === '';
        if (expired) jar.delete(name);
        else jar.set(name, value);
      }
      const location = res.headers.get('location');
      if (res.status < 300 || res.status >= 400 || location === null) return { trail, url, status: res.status, body: await res.text() };
      await res.arrayBuffer();
      url = new URL(location, url);
    }
    throw new Error(`no end after ${maxSteps} redirects: ${trail.join(' → ')}`);
  }

  #jar(host: string): Map<string, string> {
    let jar = this.#jars.get(host);
    if (jar === undefined) this.#jars.set(host, (jar = new Map()));
    return jar;
  }
}
