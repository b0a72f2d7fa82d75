/**
 * HTML text of the authorization server's own pages (errors, consent): every value that may come
 * from a client (its name, its id, a URL) is written as text, never as markup.
 */
const HTML_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/** Control and format characters: bidirectional overrides and isolates, zero-width characters, C0/C1 controls. */
const INVISIBLE = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;

/**
 * A name a client or a provider chose, as a page may show it: without the invisible characters
 * that could make it read as something else (a right-to-left override turns "gpj.exe" around),
 * whitespace collapsed, at most `max` characters. Escape it still.
 */
export function displayText(value: string, max = 80): string {
  const text = value.replace(INVISIBLE, '').replace(/\s+/g, ' ').trim();
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
