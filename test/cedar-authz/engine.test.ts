/**
 * The Cedar authorizer (plugins/cedar-authz/engine.ts) on ToolHive's documented example policies
 * (docs/authz.md, examples/authz-config*.json, in substance), with ToolHive's semantics: default
 * deny, forbid wins, any evaluation error denies, numbers as decimals. Then the decision cache:
 * keyed by what the policies read, so a refreshed token (exp, iat) finds its decisions.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createCedarAuthorizer, type CedarAuthorizer } from '../../plugins/cedar-authz/engine.ts';
import { isAuthorized } from '@cedar-policy/cedar-wasm/nodejs';
import type { CedarAuthzSettings } from '../../plugins/cedar-authz/config.ts';
import { policiesAsJson } from '../../plugins/cedar-authz/policies.ts';
import { policyReferences } from '../../plugins/cedar-authz/references.ts';
import { buildRequest, type CedarAction } from '../../plugins/cedar-authz/request.ts';

function authorizer(policies: string[], more: Partial<CedarAuthzSettings> = {}, errors: string[] = []): CedarAuthorizer {
  return createCedarAuthorizer(
    { policies, entitiesJson: '[]', groupClaimName: '', roleClaimName: '', groupEntityType: 'THVGroup', multiValuedClaims: [], serverName: 'github', ...more },
    { onError: (reason) => errors.push(reason) },
  );
}

const alice = (claims: Record<string, unknown> = {}) => ({ claims: { sub: 'alice', iss: 'https://idp.example', exp: 1_900_000_000, iat: 1_899_990_000, ...claims } });

describe("ToolHive's documented policies", () => {
  it('1. a tool anyone may call; every other tool is denied (default deny)', () => {
    const authz = authorizer(['permit(principal, action == Action::"call_tool", resource == Tool::"weather");']);
    assert.equal(authz.decide(alice(), 'call_tool', 'weather'), 'allow');
    assert.equal(authz.decide(alice(), 'call_tool', 'calculator'), 'deny');
    assert.equal(authz.decide(alice(), 'get_prompt', 'weather'), 'deny', 'another action on the same name');
  });

  it('2. a role claim: allowed with it; a token without the claim is denied everything (an evaluation error denies, as in ToolHive)', () => {
    const errors: string[] = [];
    const authz = authorizer(
      [
        'permit(principal, action == Action::"call_tool", resource == Tool::"weather");',
        'permit(principal, action == Action::"call_tool", resource) when { principal.claim_roles.contains("admin") };',
      ],
      {},
      errors,
    );
    assert.equal(authz.decide(alice({ roles: ['admin'] }), 'call_tool', 'deploy'), 'allow');
    assert.equal(authz.decide(alice({ roles: ['dev'] }), 'call_tool', 'deploy'), 'deny');
    assert.equal(authz.decide(alice({ roles: ['dev'] }), 'call_tool', 'weather'), 'allow');
    assert.equal(authz.decide(alice(), 'call_tool', 'weather'), 'deny', 'Cedar alone would allow (it skips the erroring policy); ToolHive denies');
    assert.match(errors.join('\n'), /policy1: .*claim_roles/);
    const guarded = authorizer([
      'permit(principal, action == Action::"call_tool", resource == Tool::"weather");',
      'permit(principal, action == Action::"call_tool", resource) when { principal has claim_roles && principal.claim_roles.contains("admin") };',
    ]);
    assert.equal(guarded.decide(alice(), 'call_tool', 'weather'), 'allow', 'guarded with has: no error');
  });

  it('3. an argument-conditional tool: allowed with matching arguments, denied with others or with none', () => {
    const authz = authorizer([
      'permit(principal, action == Action::"call_tool", resource == Tool::"calculator") when { resource.arg_operation == "add" || resource.arg_operation == "subtract" };',
      'permit(principal, action == Action::"call_tool", resource == Tool::"weather") when { context.arg_location == "New York" };',
    ]);
    assert.equal(authz.referencesArguments, true);
    assert.equal(authz.decide(alice(), 'call_tool', 'calculator', { operation: 'add', a: 1, b: 2 }), 'allow');
    assert.equal(authz.decide(alice(), 'call_tool', 'calculator', { operation: 'multiply' }), 'deny');
    assert.equal(authz.decide(alice(), 'call_tool', 'calculator'), 'deny', 'a list entry (no arguments): the attribute is missing, an error');
    assert.equal(authz.decide(alice(), 'call_tool', 'weather', { location: 'New York' }), 'allow');
    assert.equal(authz.decide(alice(), 'call_tool', 'weather', { location: 'Boston' }), 'deny');
  });

  it('4. a role through the entity store: group engineering → THVRole developer', () => {
    const entitiesJson = JSON.stringify([{ uid: { type: 'THVGroup', id: 'engineering' }, attrs: {}, parents: [{ type: 'THVRole', id: 'developer' }] }]);
    const authz = authorizer(['permit(principal in THVRole::"developer", action == Action::"call_tool", resource == Tool::"deploy");'], { entitiesJson });
    assert.equal(authz.decide(alice({ groups: ['engineering'] }), 'call_tool', 'deploy'), 'allow');
    assert.equal(authz.decide(alice({ groups: ['sales'] }), 'call_tool', 'deploy'), 'deny');
    assert.equal(authz.decide(alice(), 'call_tool', 'deploy'), 'deny');
  });

  it('5. a resource by its exact URI', () => {
    const authz = authorizer(['permit(principal, action == Action::"read_resource", resource == Resource::"file:///etc/passwd");']);
    assert.equal(authz.decide(alice(), 'read_resource', 'file:///etc/passwd'), 'allow');
    assert.equal(authz.decide(alice(), 'read_resource', 'file:///etc/shadow'), 'deny');
  });

  it('forbid wins over permit', () => {
    const authz = authorizer(['permit(principal, action, resource);', 'forbid(principal, action == Action::"call_tool", resource == Tool::"delete_repo");']);
    assert.equal(authz.decide(alice(), 'call_tool', 'list_issues'), 'allow');
    assert.equal(authz.decide(alice(), 'call_tool', 'delete_repo'), 'deny');
  });
});

describe('the request', () => {
  it('the resource is a child of MCP::"<server name>"; with no server name it has no parent', () => {
    const policies = ['permit(principal, action, resource in MCP::"github");'];
    assert.equal(authorizer(policies).decide(alice(), 'call_tool', 'x'), 'allow');
    assert.equal(authorizer(policies, { serverName: 'gitlab' }).decide(alice(), 'call_tool', 'x'), 'deny');
    assert.equal(authorizer(policies, { serverName: '' }).decide(alice(), 'call_tool', 'x'), 'deny');
  });

  it('group parents: the configured claim (a URL name, a dot path), else the first well-known one; role claim added; custom entity type', () => {
    const dev = 'permit(principal in THVGroup::"dev", action, resource);';
    assert.equal(authorizer([dev], { groupClaimName: 'https://x.example/groups' }).decide(alice({ 'https://x.example/groups': ['dev'] }), 'call_tool', 't'), 'allow');
    assert.equal(authorizer([dev], { groupClaimName: 'realm_access.roles' }).decide(alice({ realm_access: { roles: ['dev'] } }), 'call_tool', 't'), 'allow');
    assert.equal(authorizer([dev]).decide(alice({ 'cognito:groups': ['dev'] }), 'call_tool', 't'), 'allow', 'the well-known names');
    assert.equal(authorizer([dev]).decide(alice({ groups: [], roles: ['dev'] }), 'call_tool', 't'), 'deny', 'an empty groups list stops the fallback');
    assert.equal(authorizer([dev], { groupClaimName: 'teams' }).decide(alice({ groups: ['dev'] }), 'call_tool', 't'), 'allow', 'the configured claim absent: the well-known ones');
    assert.equal(authorizer([dev], { roleClaimName: 'app_roles' }).decide(alice({ groups: ['x'], app_roles: ['dev'] }), 'call_tool', 't'), 'allow');
    const team = 'permit(principal in Team::"dev", action, resource);';
    assert.equal(authorizer([team], { groupEntityType: 'Team' }).decide(alice({ groups: ['dev'] }), 'call_tool', 't'), 'allow');
  });

  it('claims are principal attributes and context entries; the principal is Client::"<sub>"; no sub is a deny', () => {
    const authz = authorizer(['permit(principal == Client::"alice", action, resource) when { principal.claim_email == context.claim_email };']);
    assert.equal(authz.decide(alice({ email: 'a@example.com' }), 'call_tool', 't'), 'allow');
    assert.equal(authz.decide({ claims: { sub: 'bob', email: 'b@example.com' } }, 'call_tool', 't'), 'deny');
    const anyone = authorizer(['permit(principal, action, resource);']);
    assert.equal(anyone.decide({ claims: {} }, 'call_tool', 't'), 'deny');
    assert.equal(anyone.decide({ claims: { sub: '' } }, 'call_tool', 't'), 'deny');
    assert.equal(anyone.decide({ claims: { sub: 42 } }, 'call_tool', 't'), 'deny');
  });

  it('resource attributes: standard ones win over arguments and annotations on a tool; arguments win on a prompt', () => {
    const tool = authorizer(['permit(principal, action, resource) when { resource.name == "t" && resource.feature == "tool" && resource.readOnlyHint };']);
    assert.equal(tool.decide(alice(), 'call_tool', 't', { name: 'other' }, { readOnlyHint: true }), 'allow');
    assert.equal(tool.decide(alice(), 'call_tool', 't', {}, { readOnlyHint: false }), 'deny');
    const prompt = authorizer(['permit(principal, action == Action::"get_prompt", resource) when { resource.operation == "overridden" };']);
    assert.equal(prompt.decide(alice(), 'get_prompt', 'p', { operation: 'overridden' }), 'deny', 'args are arg_-prefixed: arg_operation, so no override');
    const uri = authorizer(['permit(principal, action, resource) when { resource.uri == "mem://x" && resource.name == "mem://x" && resource.operation == "read" };']);
    assert.equal(uri.decide(alice(), 'read_resource', 'mem://x'), 'allow');
  });

  it('multi-valued claims: a list or a space-separated string is claim_<name> (joined) and claimset_<name> (a Set), as ToolHive\'s multi_valued_claims', () => {
    const authz = authorizer(['permit(principal, action, resource) when { principal.claimset_scp.contains("Mail.Read") && context.claim_scp like "*Mail.Read*" };'], { multiValuedClaims: ['scp'] });
    assert.equal(authz.decide(alice({ scp: ['Mail.Read', 'User.Read', 7] }), 'call_tool', 't'), 'allow', 'a list (non-strings skipped)');
    assert.equal(authz.decide(alice({ scp: ' Mail.Read  User.Read ' }), 'call_tool', 't'), 'allow', 'a string');
    assert.equal(authz.decide(alice({ scp: 'Mail.ReadWrite' }), 'call_tool', 't'), 'deny', 'the Set holds exact elements');
    const unlisted = authorizer(['permit(principal, action, resource) when { principal has claimset_scp };']);
    assert.equal(unlisted.decide(alice({ scp: ['Mail.Read'] }), 'call_tool', 't'), 'deny', 'not listed: no claimset_');
  });

  it('arguments: scalars as arg_<name>, anything else (null, list, object) as arg_<name>_present', () => {
    const authz = authorizer(['permit(principal, action, resource) when { context.arg_q == "x" && context.arg_flag && context.arg_list_present && context.arg_obj_present && context.arg_none_present };']);
    assert.equal(authz.decide(alice(), 'call_tool', 't', { q: 'x', flag: true, list: [1], obj: { a: 1 }, none: null }), 'allow');
    assert.equal(authz.decide(alice(), 'call_tool', 't', { q: 'x', flag: true, list: [1], obj: { a: 1 } }), 'deny');
  });
});

describe('numbers are decimals, as in ToolHive (Go float64 → cedar-go NewDecimalFromFloat)', () => {
  const decide = (condition: string, claims: Record<string, unknown>, args?: Record<string, unknown>) =>
    authorizer([`permit(principal, action, resource) when { ${condition} };`]).decide(alice(claims), 'call_tool', 't', args);

  it('a whole number is not a long: == 3 is false, == decimal("3.0") is true', () => {
    assert.equal(decide('principal.claim_level == 3', { level: 3 }), 'deny');
    assert.equal(decide('principal.claim_level == decimal("3.0")', { level: 3 }), 'allow');
  });
  it('< on a decimal is an error (deny); the decimal methods compare', () => {
    assert.equal(decide('principal.claim_level < 5', { level: 3 }), 'deny');
    assert.equal(decide('principal.claim_level.lessThan(decimal("5.0"))', { level: 3 }), 'allow');
  });
  it('truncated to 4 places toward zero; negative numbers too', () => {
    assert.equal(decide('context.arg_x == decimal("2.7182")', {}, { x: 2.718281828 }), 'allow');
    assert.equal(decide('context.arg_x == decimal("-2.7182")', {}, { x: -2.718281828 }), 'allow');
  });
  it('a number beyond the decimal range, and null, are left out', () => {
    assert.equal(decide('!(principal has claim_big) && !(principal has claim_gone)', { big: 1e20, gone: null }), 'allow');
  });
  it('a list keeps its convertible items; nested objects are records', () => {
    assert.equal(decide('principal.claim_mixed.contains("a") && principal.claim_mixed.contains(decimal("1.0")) && principal.claim_org.team == "x"', { mixed: ['a', 1, null], org: { team: 'x' } }), 'allow');
  });
});

describe('hostile values', () => {
  it('a nested object shaped as an entity reference stays a record (its escape key left out): it cannot forge an entity', () => {
    const authz = authorizer(['permit(principal, action, resource) when { principal.claim_org == Admin::"root" };', 'permit(principal, action, resource == Tool::"empty") when { principal.claim_org == {} };']);
    const claims = { org: { __entity: { type: 'Admin', id: 'root' } } };
    assert.equal(authz.decide(alice(claims), 'call_tool', 't'), 'deny');
    assert.equal(authz.decide(alice(claims), 'call_tool', 'empty'), 'allow');
  });
  it('a lone surrogate in a claim, an argument or a name does not throw: it becomes U+FFFD', () => {
    const authz = authorizer(['permit(principal, action, resource) when { context.arg_s == "a\\u{FFFD}" };']);
    assert.equal(authz.decide(alice({ name: '\ud800' }), 'call_tool', '\udc00', { s: 'a\ud800' }), 'allow');
  });
  it('nesting deeper than 10 levels is left out, not recursed into', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 5000; i++) deep = [deep];
    const authz = authorizer(['permit(principal, action, resource);']);
    assert.equal(authz.decide(alice({ deep }), 'call_tool', 't'), 'allow');
  });
  it('a static entity with the principal\'s uid is replaced by the request\'s (ToolHive merges them so)', () => {
    const entitiesJson = JSON.stringify([{ uid: { type: 'Client', id: 'alice' }, attrs: {}, parents: [{ type: 'THVGroup', id: 'admins' }] }]);
    const authz = authorizer(['permit(principal in THVGroup::"admins", action, resource);'], { entitiesJson });
    assert.equal(authz.decide(alice(), 'call_tool', 't'), 'deny');
  });
});

describe('the decision cache', () => {
  it('a refreshed token (new exp, iat, jti) finds the decision: only referenced claims are in the key', () => {
    const authz = authorizer(['permit(principal, action, resource) when { principal has claim_roles && principal.claim_roles.contains("admin") };']);
    assert.equal(authz.decide(alice({ roles: ['admin'], jti: 'a' }), 'call_tool', 't'), 'allow');
    assert.equal(authz.decide(alice({ roles: ['admin'], jti: 'b', exp: 1_900_003_600, iat: 1_899_999_000 }), 'call_tool', 't'), 'allow');
    assert.equal(authz.cachedDecisions, 1);
    assert.equal(authz.decide(alice({ roles: ['dev'] }), 'call_tool', 't'), 'deny');
    assert.equal(authz.cachedDecisions, 2, 'a referenced claim that changes is a new key');
    assert.equal(authz.decide({ claims: { sub: 'bob', roles: ['admin'] } }, 'call_tool', 't'), 'allow');
    assert.equal(authz.cachedDecisions, 2, 'no policy compares the principal: callers with the same claims share');
  });

  it('the subject is in the key when a policy can compare the principal', () => {
    const authz = authorizer(['permit(principal == Client::"alice", action, resource);']);
    assert.equal(authz.decide(alice(), 'call_tool', 't'), 'allow');
    assert.equal(authz.decide({ claims: { sub: 'bob' } }, 'call_tool', 't'), 'deny');
    assert.equal(authz.cachedDecisions, 2);
  });

  it('group parents are in the key', () => {
    const authz = authorizer(['permit(principal in THVGroup::"dev", action, resource);']);
    assert.equal(authz.decide(alice({ groups: ['dev'] }), 'call_tool', 't'), 'allow');
    assert.equal(authz.decide(alice({ groups: ['ops'] }), 'call_tool', 't'), 'deny');
  });

  it('arguments are in the key only when a policy reads them', () => {
    const reads = authorizer(['permit(principal, action, resource) when { context has arg_op && context.arg_op == "add" };']);
    assert.equal(reads.decide(alice(), 'call_tool', 't', { op: 'add', n: 1 }), 'allow');
    assert.equal(reads.decide(alice(), 'call_tool', 't', { op: 'add', n: 2 }), 'allow');
    assert.equal(reads.decide(alice(), 'call_tool', 't', { op: 'sub' }), 'deny');
    assert.equal(reads.cachedDecisions, 2, 'n is not read');
    const ignores = authorizer(['permit(principal, action, resource);']);
    assert.equal(ignores.referencesArguments, false);
    ignores.decide(alice(), 'call_tool', 't', { op: 'add' });
    ignores.decide(alice(), 'call_tool', 't', { op: 'sub' });
    assert.equal(ignores.cachedDecisions, 1);
  });

  it('a policy that uses the whole context puts every claim in the key (exp included: it can read it)', () => {
    const authz = authorizer(['permit(principal, action, resource) when { context != {} };']);
    assert.equal(authz.referencesArguments, true);
    authz.decide(alice(), 'call_tool', 't');
    authz.decide(alice({ exp: 1 }), 'call_tool', 't');
    assert.equal(authz.cachedDecisions, 2);
  });

  it('is bounded: the least recently used decision is dropped; cacheSize 0 turns it off', () => {
    const settings = { policies: ['permit(principal, action, resource);'], entitiesJson: '', groupClaimName: '', roleClaimName: '', groupEntityType: 'THVGroup', multiValuedClaims: [], serverName: '' };
    const small = createCedarAuthorizer(settings, { cacheSize: 3 });
    for (let i = 0; i < 10; i++) assert.equal(small.decide(alice(), 'call_tool', `t${i}`), 'allow');
    assert.equal(small.cachedDecisions, 3);
    const none = createCedarAuthorizer(settings, { cacheSize: 0 });
    assert.equal(none.decide(alice(), 'call_tool', 't'), 'allow');
    assert.equal(none.cachedDecisions, 0);
  });
});

describe('the preparsed policy set', () => {
  it('is named by a digest of the policies: the same policies share one id, others get another', () => {
    const a = authorizer(['permit(principal, action, resource);']);
    const b = authorizer(['permit(principal, action, resource);']);
    const c = authorizer(['forbid(principal, action, resource);']);
    assert.equal(a.policySetId, b.policySetId);
    assert.notEqual(a.policySetId, c.policySetId);
    assert.equal(a.decide(alice(), 'call_tool', 't'), 'allow', 'a set preparsed again under its id still decides');
    assert.equal(c.decide(alice(), 'call_tool', 't'), 'deny');
  });

  it('a config with problems throws, naming each', () => {
    assert.throws(() => authorizer(['permit(principal, acton, resource);', 'permit(principal, action, resource)']), /policies\[0\]: line 1 col 19: .*acton.*; policies\[1\]: /);
    assert.throws(() => authorizer([]), /no policies/);
    assert.throws(() => authorizer(['permit(principal, action, resource);'], { entitiesJson: '{' }), /entitiesJson: is not JSON/);
  });
});

describe('only the attributes the policies read are sent to Cedar', () => {
  it('changes no decision: the same decisions with every claim and argument (ToolHive\'s whole request)', () => {
    const policies = [
      'permit(principal, action == Action::"call_tool", resource) when { principal has claim_roles && principal.claim_roles.contains("admin") };',
      'permit(principal, action == Action::"call_tool", resource == Tool::"calc") when { context has arg_op && context.arg_op == "add" };',
      'forbid(principal, action, resource) when { context has claim_blocked && context.claim_blocked };',
      'permit(principal in THVGroup::"dev", action == Action::"get_prompt", resource);',
    ];
    const settings = { policies, entitiesJson: '[]', groupClaimName: '', roleClaimName: '', groupEntityType: 'THVGroup', multiValuedClaims: [], serverName: 'srv' };
    const record = Object.fromEntries(policies.map((text, i) => [`policy${i}`, text]));
    const read = policyReferences(policiesAsJson(policies)).attributes;
    const callers = [
      { sub: 'a', roles: ['admin'], email: 'a@x', exp: 1 },
      { sub: 'b', roles: ['dev'], groups: ['dev'], blocked: false, level: 3 },
      { sub: 'c', roles: ['admin'], blocked: true, nested: { deep: [1, 'x'] } },
      { sub: 'd' },
    ];
    const requests: [CedarAction, string, Record<string, unknown> | undefined][] = [
      ['call_tool', 'calc', { op: 'add', n: 1.5 }],
      ['call_tool', 'calc', { op: 'sub', list: [1] }],
      ['call_tool', 'other', undefined],
      ['get_prompt', 'p', { x: 'y' }],
    ];
    const decide = (claims: Record<string, unknown>, action: CedarAction, id: string, args: Record<string, unknown> | undefined, only: ReadonlySet<string> | null) => {
      const request = buildRequest(settings, claims, action, id, args, undefined, only)!;
      const answer = isAuthorized({ ...request, policies: { staticPolicies: record } });
      assert.equal(answer.type, 'success');
      return answer.type === 'success' ? `${answer.response.decision}/${answer.response.diagnostics.errors.length > 0}` : 'failure';
    };
    let compared = 0;
    for (const claims of callers) {
      for (const [action, id, args] of requests) {
        assert.equal(decide(claims, action, id, args, read), decide(claims, action, id, args, null), `${JSON.stringify(claims)} ${action} ${id}`);
        compared++;
      }
    }
    assert.equal(compared, 16);
  });
});

describe('the list decision: without arguments, unless some arguments could allow the item', () => {
  it('an argument-conditional permit: allowed in the list, each call decided with its arguments', () => {
    const authz = authorizer(['permit(principal, action == Action::"call_tool", resource == Tool::"calc") when { resource.arg_op == "add" };']);
    assert.equal(authz.decide(alice(), 'call_tool', 'calc'), 'deny', 'ToolHive\'s list decision: the read errors');
    assert.equal(authz.listDecision(alice(), 'call_tool', 'calc'), 'allow');
    assert.equal(authz.listDecision(alice(), 'call_tool', 'other'), 'deny', 'no policy reading arguments can match it');
    assert.equal(authz.dependsOnArguments('call_tool', 'calc'), true);
    assert.equal(authz.dependsOnArguments('call_tool', 'other'), false);
  });

  it('what does not depend on the arguments still decides: a claim, a forbid, an evaluation error', () => {
    const authz = authorizer([
      'permit(principal, action == Action::"call_tool", resource) when { principal has claim_roles && principal.claim_roles.contains("admin") && context.arg_x == 1 };',
      'forbid(principal, action == Action::"call_tool", resource == Tool::"never");',
      'forbid(principal, action == Action::"call_tool", resource == Tool::"guarded") when { context has arg_force };',
    ]);
    assert.equal(authz.listDecision(alice({ roles: ['admin'] }), 'call_tool', 't'), 'allow');
    assert.equal(authz.listDecision(alice({ roles: ['dev'] }), 'call_tool', 't'), 'deny', 'no arguments make a developer an admin');
    assert.equal(authz.listDecision(alice({ roles: ['admin'] }), 'call_tool', 'never'), 'deny', 'a forbid whatever the arguments');
    assert.equal(authz.listDecision(alice({ roles: ['admin'] }), 'call_tool', 'guarded'), 'allow', 'a forbid on an argument present: calls without it are allowed');
    const erroring = authorizer(['permit(principal, action, resource) when { principal.claim_level > 0 && context.arg_x == 1 };']);
    assert.equal(erroring.listDecision(alice(), 'call_tool', 't'), 'deny', 'an error whatever the arguments denies, as in ToolHive');
  });

  it('resources are read without arguments; a policy using the whole context keeps ToolHive\'s list decision', () => {
    const reads = authorizer(['permit(principal, action == Action::"read_resource", resource) when { context.arg_x == 1 };']);
    assert.equal(reads.listDecision(alice(), 'read_resource', 'file:///a'), 'deny');
    const whole = authorizer(['permit(principal, action, resource) when { context == {} };']);
    assert.equal(whole.listDecision(alice(), 'call_tool', 't'), whole.decide(alice(), 'call_tool', 't'));
    assert.equal(whole.dependsOnArguments('call_tool', 't'), true);
  });

  it('list decisions are cached apart from calls', () => {
    const authz = authorizer(['permit(principal, action == Action::"call_tool", resource == Tool::"calc") when { resource.arg_op == "add" };']);
    authz.listDecision(alice(), 'call_tool', 'calc');
    const after = authz.cachedDecisions;
    assert.equal(after, 2, 'the decision without arguments, and the list\'s');
    authz.listDecision(alice({ jti: 'refreshed' }), 'call_tool', 'calc');
    assert.equal(authz.cachedDecisions, after);
  });
});

describe('the caller key', () => {
  it('is what the policies read of the caller, kept per claims object', () => {
    const authz = authorizer(['permit(principal in THVGroup::"dev", action, resource) when { principal has claim_level };']);
    const claims = { sub: 'a', groups: ['dev'], level: 2, exp: 1 };
    const key = authz.callerKey({ claims });
    assert.equal(authz.callerKey({ claims }), key);
    assert.equal(authz.callerKey({ claims: { ...claims, sub: 'b', exp: 2 } }), key, 'sub and exp are not read');
    assert.notEqual(authz.callerKey({ claims: { ...claims, groups: ['ops'] } }), key);
    assert.notEqual(authz.callerKey({ claims: { ...claims, level: 3 } }), key);
    assert.equal(authz.callerKey({ claims: { groups: ['dev'] } }), 'no-subject');
  });
});
