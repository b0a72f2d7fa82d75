/**
 * Routing concrete URIs by RFC 6570 resource templates: what each expression matches, and time
 * linear in the input for the shapes that made a backtracking regex take seconds.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resourceOwner, type ListCache } from '../../core/mcp/aggregate/lists.ts';
import { LOOKUP_WORK, MAX_TEMPLATE_LENGTH, MAX_URI_LENGTH, UriTemplateMatcher } from '../../core/mcp/aggregate/uri-template.ts';

const matches = (template: string, uri: string): boolean => new UriTemplateMatcher(template).matches(uri);

describe('resource template matching', () => {
  it('matches what each expression expands to, and nothing else', () => {
    assert.ok(matches('fixture://alpha/item/{id}', 'fixture://alpha/item/42'));
    assert.ok(!matches('fixture://alpha/item/{id}', 'fixture://alpha/item/42/more'), 'a simple value has no "/"');
    assert.ok(!matches('fixture://alpha/item/{id}', 'fixture://alpha/item/'), 'and is not empty');
    assert.ok(matches('file:///{+path}', 'file:///a/b/c.txt'), 'a reserved value may have "/"');
    assert.ok(!matches('demo://x.y/{id}', 'demo://xzy/1'), 'dots are literal');
    assert.ok(matches('docs://page{#section}', 'docs://page#intro/part'));
    assert.ok(matches('docs://page{#section}', 'docs://page'), 'an expression with a prefix may expand to nothing');
    assert.ok(matches('file:///report{.ext}', 'file:///report.pdf'));
    assert.ok(!matches('file:///report{.ext}', 'file:///report.tar.gz'), 'a label value has no "."');
    assert.ok(matches('repo://{owner}{/path}', 'repo://acme/src/lib/a.ts'));
    assert.ok(matches('search://items{?q,page}', 'search://items?q=mcp&page=2'));
    assert.ok(!matches('search://items{?q}', 'search://itemsq=1'), 'a query needs its "?"');
    assert.ok(matches('search://items?x=1{&q}', 'search://items?x=1&q=2'));
    assert.ok(matches('m://{;params}', 'm://;a=1;b=2'));
    assert.ok(matches('plain://no-expressions', 'plain://no-expressions'));
    assert.ok(!matches('plain://no-expressions', 'plain://no-expressions/'));
    assert.ok(matches('odd://{unclosed', 'odd://{unclosed'), 'an unclosed brace is literal');
  });

  it('stays linear on hostile pairs: many reserved expressions and a long URI that fails at the end', () => {
    // The old regex took ~9 s on the first pair at 3,200 characters (cubic backtracking). The
    // work here is counted, not timed: states visited grow with the URI's length, never faster.
    const templates = ['x://{+a}/{+b}/{+c}/end', 'x://' + '{+a}/'.repeat(60) + 'end', 'x://' + '{a}{+b}'.repeat(40) + '!'];
    for (const template of templates) {
      const matcher = new UriTemplateMatcher(template);
      const work = (length: number): number => {
        assert.equal(matcher.matches('x://' + '/'.repeat(length) + 'nope'), false);
        return matcher.lastWork;
      };
      const [short, long] = [work(1_600), work(3_200)];
      assert.ok(long <= matcher.size * (3_200 + 9), `${template.slice(0, 24)}…: ${long} states visited`);
      assert.ok(long / short < 2.1, `twice the input, ${(long / short).toFixed(2)}× the work`);
    }
  });

  it('bounds what it will look at: an overlong template matches nothing, an overlong URI no template', () => {
    assert.equal(matches('x://' + 'a'.repeat(MAX_TEMPLATE_LENGTH), 'x://' + 'a'.repeat(MAX_TEMPLATE_LENGTH)), false);
    assert.equal(matches('x://{+a}', 'x://' + 'a'.repeat(MAX_URI_LENGTH)), false);
    assert.equal(matches('x://{+a}', 'x://' + 'a'.repeat(MAX_URI_LENGTH - 10)), true);
  });

  it('bounds a whole lookup, not one template: many hostile templates share one work budget', () => {
    const matchers = Array.from({ length: 40 }, (_, i) => new UriTemplateMatcher('x://' + '{#a}'.repeat(250) + `end${i}`));
    const cache: ListCache = {
      items: [],
      names: null,
      uris: null,
      templates: matchers.map((matcher, i) => ({ matcher, uriTemplate: matcher.template, backend: `b${i % 2}` })),
      conflicts: [],
      ttlMs: null,
      cacheScope: 'private',
      fetchedAt: 0,
      complete: true,
      failures: new Map(),
      pages: new Map(), pagesVersion: -1,
    };
    assert.equal(resourceOwner(undefined, cache, 'x://' + '#'.repeat(4000)), null);
    const work = matchers.reduce((sum, m) => sum + m.lastWork, 0);
    assert.ok(work <= LOOKUP_WORK + matchers[0]!.size, `${work} states visited in all, budget ${LOOKUP_WORK}`);
    assert.equal(resourceOwner(undefined, cache, 'x://#a#b#cend7'), 'b1', 'a matching URI is still found');
  });
});
