/**
 * Markdown files of the repository read as GitHub renders them, for the documentation tests:
 * their headings and the anchors GitHub gives them (github-slugger, GitHub's own algorithm, with
 * its -1, -2 for repeated headings), their links, and the words they write as code.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import GithubSlugger from 'github-slugger';
import { lexer, type Token, type Tokens } from 'marked';
import { REPO_ROOT } from '../fixtures/processes.ts';

export interface Heading {
  readonly depth: number;
  /** The heading as written (markdown). */
  readonly raw: string;
  readonly anchor: string;
}

export interface Link {
  readonly text: string;
  readonly href: string;
}

export interface MarkdownFile {
  /** Repository-relative path, with `/`. */
  readonly path: string;
  readonly headings: readonly Heading[];
  /** Heading anchors and the ids of HTML anchors (`<a id="...">`, `<a name="...">`). */
  readonly anchors: ReadonlySet<string>;
  readonly links: readonly Link[];
  /**
   * The words written as code, block by block: a paragraph, a heading, a list item (without its
   * nested lists, which are blocks of their own), a table row together with the table's header
   * row, a fenced code block. Code is inline code spans and code blocks; a word is a run of
   * letters, digits and `_`.
   */
  readonly codeBlocks: readonly ReadonlySet<string>[];
}

/** The repository's markdown files: every `.md` outside .git and the names .gitignore lists (`name/`, a folder; `name`, a folder or a file). */
export function markdownFiles(): string[] {
  const ignored = new Set(['.git']);
  for (const line of readFileSync(join(REPO_ROOT, '.gitignore'), 'utf8').split('\n')) {
    const folder = /^\/?([^*!#\s/][^*\s/]*)\/?$/.exec(line.trim());
    if (folder) ignored.add(folder[1]!);
  }
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      if (ignored.has(name)) continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.md')) out.push(relative(REPO_ROOT, path).split(sep).join('/'));
    }
  };
  walk(REPO_ROOT);
  return out.sort();
}

/** The text a heading or link shows, without its markdown. */
function plainText(tokens: readonly Token[] = []): string {
  return tokens
    .map((token) => {
      if ('tokens' in token && Array.isArray(token.tokens)) return plainText(token.tokens);
      if (token.type === 'html') return '';
      return 'text' in token && typeof token.text === 'string' ? token.text : '';
    })
    .join('');
}

const WORD = /[A-Za-z0-9_]+/g;

function inlineCodeWords(tokens: readonly Token[] = [], into: Set<string>): Set<string> {
  for (const token of tokens) {
    if (token.type === 'codespan') for (const word of (token as Tokens.Codespan).text.match(WORD) ?? []) into.add(word);
    else if (token.type !== 'list' && 'tokens' in token && Array.isArray(token.tokens)) inlineCodeWords(token.tokens, into);
  }
  return into;
}

function htmlAnchors(html: string, into: Set<string>): void {
  for (const match of html.matchAll(/<a\s[^>]*\b(?:id|name)\s*=\s*["']([^"']+)["']/gi)) into.add(match[1]!);
}

export function readMarkdown(path: string): MarkdownFile {
  const tokens = lexer(readFileSync(join(REPO_ROOT, path), 'utf8'));
  const slugger = new GithubSlugger();
  const headings: Heading[] = [];
  const anchors = new Set<string>();
  const links: Link[] = [];
  const codeBlocks: Set<string>[] = [];

  const visitInline = (list: readonly Token[] = []): void => {
    for (const token of list) {
      if (token.type === 'link') links.push({ text: plainText((token as Tokens.Link).tokens), href: (token as Tokens.Link).href });
      else if (token.type === 'image') links.push({ text: (token as Tokens.Image).text, href: (token as Tokens.Image).href });
      else if (token.type === 'html') htmlAnchors((token as Tokens.HTML).text, anchors);
      if ('tokens' in token && Array.isArray(token.tokens) && token.type !== 'list') visitInline(token.tokens);
    }
  };

  const visitBlocks = (list: readonly Token[]): void => {
    for (const token of list) {
      switch (token.type) {
        case 'heading': {
          const heading = token as Tokens.Heading;
          const anchor = slugger.slug(plainText(heading.tokens));
          headings.push({ depth: heading.depth, raw: heading.text, anchor });
          anchors.add(anchor);
          codeBlocks.push(inlineCodeWords(heading.tokens, new Set()));
          visitInline(heading.tokens);
          break;
        }
        case 'code':
          codeBlocks.push(new Set((token as Tokens.Code).text.match(WORD) ?? []));
          break;
        case 'table': {
          const table = token as Tokens.Table;
          const header = new Set<string>();
          for (const cell of table.header) {
            inlineCodeWords(cell.tokens, header);
            visitInline(cell.tokens);
          }
          codeBlocks.push(header);
          for (const row of table.rows) {
            const words = new Set(header);
            for (const cell of row) {
              inlineCodeWords(cell.tokens, words);
              visitInline(cell.tokens);
            }
            codeBlocks.push(words);
          }
          break;
        }
        case 'list':
          for (const item of (token as Tokens.List).items) {
            codeBlocks.push(inlineCodeWords(item.tokens, new Set()));
            visitInline(item.tokens);
            visitBlocks(item.tokens.filter((child) => child.type === 'list' || child.type === 'code' || child.type === 'table'));
          }
          break;
        case 'blockquote':
          visitBlocks((token as Tokens.Blockquote).tokens);
          break;
        case 'html':
          htmlAnchors((token as Tokens.HTML).text, anchors);
          break;
        default:
          if ('tokens' in token && Array.isArray(token.tokens)) {
            codeBlocks.push(inlineCodeWords(token.tokens, new Set()));
            visitInline(token.tokens);
          }
      }
    }
  };
  visitBlocks(tokens);
  return { path, headings, anchors, links, codeBlocks };
}

/**
 * Why a relative link of `from` does not resolve, or null when it does. A link with a scheme
 * (https:, mailto:) is not checked. The path, relative to the linking file, must name a file or
 * folder inside the repository; an #anchor must be a heading or HTML anchor of the markdown file
 * it names (a folder's README.md), or of `from` itself when the link is only an anchor.
 */
export function linkProblem(from: MarkdownFile, href: string, read: (path: string) => MarkdownFile): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) return null;
  const hash = href.indexOf('#');
  const pathPart = decodeURIComponent(hash < 0 ? href : href.slice(0, hash));
  const anchor = hash < 0 ? null : decodeURIComponent(href.slice(hash + 1));
  let target = from.path;
  if (pathPart !== '') {
    if (pathPart.startsWith('/')) return 'is absolute: write it relative to the file, so that it resolves on any checkout';
    const absolute = resolve(REPO_ROOT, dirname(from.path), pathPart);
    const inRepo = relative(REPO_ROOT, absolute).split(sep).join('/');
    if (inRepo.startsWith('..')) return 'points outside the repository';
    if (!existsSync(absolute)) return `names ${inRepo}, which does not exist`;
    target = inRepo;
    if (statSync(absolute).isDirectory()) {
      if (anchor === null) return null;
      target = inRepo === '' ? 'README.md' : `${inRepo}/README.md`;
      if (!existsSync(join(REPO_ROOT, target))) return `has an anchor, but ${inRepo || 'the repository root'} has no README.md`;
    }
  }
  if (anchor === null || anchor === '') return null;
  if (!target.endsWith('.md')) return null; // GitHub's line anchors (#L10) and the like
  const doc = target === from.path ? from : read(target);
  if (doc.anchors.has(anchor)) return null;
  return `#${anchor} is not a heading of ${target}`;
}
