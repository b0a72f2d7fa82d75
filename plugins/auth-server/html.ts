/**
 * HTML text of the authorization server's own pages (errors, consent): every value that may come
 * from a client (its name, its id, a URL) is written as text, never as markup.
 */
const HTML_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}
