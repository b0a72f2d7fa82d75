/**
 * The consent page, shown after the login in the browser that went through it: who asks (the
 * client's self-given name and its id), for which MCP server (its display name or resource URL),
 * what (the scopes), as whom, and where the authorization will go: the redirect URI's host for
 * http(s), and for any other scheme the scheme and the whole URI (`web+mcpclient://claude.ai/cb`
 * is an application on the device that handles `web+mcpclient:` links, not claude.ai). Every value
 * a client chose is shown as text: escaped, without invisible characters (html.ts). Readable on a
 * phone (viewport), Allow and Deny look different. It cannot be framed and loads nothing.
 */
import type { ServerResponse } from 'node:http';
import { displayText, escapeHtml } from './html.ts';

export interface ConsentView {
  /** Where the form posts, and its single-use token. */
  readonly action: string;
  readonly token: string;
  /** The client's self-given name (or its id when it gave none) and its id. */
  readonly clientName: string;
  readonly clientId: string;
  /** The redirect URI the code will go to, as the authorization request gave it. */
  readonly redirectUri: string;
  /** The MCP server: `authServerConfig.displayName`, or the resource URL. */
  readonly server: string;
  /** The user, as the first provider named them. */
  readonly user: string;
  readonly scopes: readonly string[];
}

/** What a scope lets the client do, for the page (any other is the MCP server's own). */
const SCOPE_MEANINGS: Readonly<Record<string, string>> = {
  openid: 'know who you are',
  offline_access: 'stay connected after you close this page (a refresh token)',
};

const STYLE =
  'body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:36rem;margin:1.5rem auto;padding:0 1rem;color:#1b1b1b}' +
  'h1{font-size:1.35rem;line-height:1.3}code{word-break:break-all;background:#f2f2f2;padding:0 .25em;border-radius:3px}' +
  '.where{border-left:4px solid #b35900;background:#fff6ec;padding:.25rem 1rem;margin:1rem 0}' +
  '.actions{display:flex;gap:.75rem;margin-top:1.5rem}button{flex:1;font:inherit;font-size:1.1rem;padding:.75rem;border-radius:8px;cursor:pointer}' +
  '.allow{background:#1a7f37;border:2px solid #1a7f37;color:#fff;font-weight:600}.deny{background:#fff;border:2px solid #b42318;color:#b42318}';

/** Where the code goes, as HTML: the host for http(s); otherwise the scheme and the whole URI. */
function destination(redirectUri: string): string {
  let url: URL;
  try {
    url = new URL(redirectUri);
  } catch {
    return 'an address that is not valid';
  }
  const whole = `<code>${escapeHtml(displayText(url.href, 500))}</code>`;
  if ((url.protocol === 'https:' || url.protocol === 'http:') && url.host !== '') return `<strong>${escapeHtml(displayText(url.host, 255))}</strong> (${whole})`;
  return `an application on this device that opens <strong>${escapeHtml(displayText(url.protocol, 64))}</strong> links, at ${whole}. It is not a web site, whatever the address names after the scheme`;
}

function scopeItem(scope: string): string {
  const meaning = SCOPE_MEANINGS[scope] ?? 'use the MCP server';
  return `<li>${escapeHtml(meaning)} (<code>${escapeHtml(displayText(scope, 64))}</code>)</li>`;
}

export function consentPage(res: ServerResponse, view: ConsentView): void {
  res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    // Not no-referrer: under it a browser sends `Origin: null` with the form's POST (Fetch,
    // "append a request Origin header"), which the origin guard refuses. same-origin still sends
    // nothing to any other site.
    'referrer-policy': 'same-origin',
    'x-frame-options': 'DENY',
    // No form-action: Chromium and WebKit apply it to the redirects after the POST too, and both
    // answers redirect to another site (the provider, or the client). The single-use token and
    // the origin guard protect the form.
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
  });
  const asked = view.scopes.length > 0 ? view.scopes.map(scopeItem).join('') : '<li>nothing beyond signing you in</li>';
  res.end(
    '<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
      `<title>Allow access?</title><style>${STYLE}</style>` +
      `<h1>Allow <q>${escapeHtml(displayText(view.clientName, 100))}</q> to use <q>${escapeHtml(displayText(view.server, 200))}</q> as ${escapeHtml(displayText(view.user, 100))}?</h1>` +
      `<p>The name is the one the client gave itself. Client: <code>${escapeHtml(displayText(view.clientId, 300))}</code></p>` +
      `<p>It asks to:</p><ul>${asked}</ul>` +
      `<div class="where"><p>It will receive its authorization at ${destination(view.redirectUri)}.</p><p>Allow only if you started this from that application.</p></div>` +
      `<form method="post" action="${escapeHtml(view.action)}"><input type="hidden" name="token" value="${escapeHtml(view.token)}">` +
      '<div class="actions"><button name="decision" value="deny" class="deny">Deny</button><button name="decision" value="allow" class="allow">Allow</button></div></form>',
  );
}
