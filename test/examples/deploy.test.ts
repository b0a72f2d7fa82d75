/**
 * examples/deploy as an operator would use it: every Kubernetes manifest parses and is listed by
 * the kustomization; the Deployment probes /readyz and /healthz on the port the gateway listens
 * on and runs as a non-root user with a read-only root; the ConfigMap's vMCP configuration,
 * joined with the Secret's credentials as the init container joins them, passes the project's
 * own validator; the Service and the Deployment agree. The Dockerfile is linted
 * (dockerfile-utils, the VS Code Docker linter) and holds to what the project needs: several
 * stages on node:20-slim, `npm ci --omit=dev`, the package's files, a numeric non-root user.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DockerfileParser } from 'dockerfile-ast';
import { validate as lintDockerfile } from 'dockerfile-utils';
import { parseAllDocuments } from 'yaml';
import { formatProblems } from '../../core/config/problems.ts';
import { validateVmcpText } from '../../core/config/vmcp-config.ts';
import { REPO_ROOT } from '../fixtures/processes.ts';

const DEPLOY = join(REPO_ROOT, 'examples/deploy');
const KUBERNETES = join(DEPLOY, 'kubernetes');

// The shapes read here, loosely: a wrong one fails an assertion below, not the type checker.
type Manifest = { kind: string; metadata: { name: string; labels?: Record<string, string> }; [key: string]: any };

/** Every document of every manifest file, parsed strictly (a YAML error or warning fails). */
function manifests(): Map<string, Manifest[]> {
  const files = new Map<string, Manifest[]>();
  for (const name of readdirSync(KUBERNETES).filter((f) => f.endsWith('.yaml')).sort()) {
    const docs = parseAllDocuments(readFileSync(join(KUBERNETES, name), 'utf8'), { prettyErrors: true });
    const parsed: Manifest[] = [];
    for (const doc of docs) {
      assert.deepEqual([...doc.errors, ...doc.warnings].map(String), [], `${name} is valid YAML`);
      parsed.push(doc.toJS() as Manifest);
    }
    files.set(name, parsed);
  }
  return files;
}

const FILES = manifests();
const all = [...FILES.values()].flat();
function one(kind: string): Manifest {
  const found = all.filter((m) => m.kind === kind);
  assert.equal(found.length, 1, `one ${kind}`);
  return found[0]!;
}

describe('examples/deploy/kubernetes', () => {
  const deployment = one('Deployment');
  const pod = deployment.spec.template;
  const [container] = pod.spec.containers as any[];
  const [init] = pod.spec.initContainers as any[];
  const configMap = one('ConfigMap');
  const secret = one('Secret');
  const service = one('Service');

  it('every file is listed in the kustomization, and every document has its kind, apiVersion and name', () => {
    const kustomization = FILES.get('kustomization.yaml')![0]!;
    assert.deepEqual([...kustomization.resources].sort(), [...FILES.keys()].filter((f) => f !== 'kustomization.yaml').sort());
    for (const m of all.filter((m) => m.kind !== 'Kustomization')) {
      assert.ok(typeof m.apiVersion === 'string' && typeof m.kind === 'string' && typeof m.metadata?.name === 'string', JSON.stringify(m).slice(0, 80));
    }
  });

  it('the Deployment probes /readyz (readiness) and /healthz (liveness) on the port the gateway listens on', () => {
    assert.equal(container.readinessProbe.httpGet.path, '/readyz');
    assert.equal(container.livenessProbe.httpGet.path, '/healthz');
    const ports = new Map((container.ports as { name: string; containerPort: number }[]).map((p) => [p.name, p.containerPort]));
    for (const probe of [container.readinessProbe, container.livenessProbe]) {
      assert.ok(ports.has(probe.httpGet.port), `the probe's port ${probe.httpGet.port} is a named port of the container`);
    }
    const args = container.args as string[];
    assert.deepEqual(args.slice(0, 2), ['vmcp', 'serve']);
    assert.equal(Number(args[args.indexOf('--port') + 1]), ports.get(container.readinessProbe.httpGet.port));
    assert.equal(args[args.indexOf('--host') + 1], '0.0.0.0', 'reachable by the kubelet and the Service, not only on loopback');
  });

  it('runs as a non-root user, without privilege escalation, on a read-only root with /tmp writable', () => {
    assert.equal(pod.spec.securityContext.runAsNonRoot, true);
    assert.ok(pod.spec.securityContext.runAsUser > 0);
    for (const c of [container, init]) {
      assert.equal(c.securityContext.allowPrivilegeEscalation, false, c.name);
      assert.equal(c.securityContext.readOnlyRootFilesystem, true, c.name);
      assert.deepEqual(c.securityContext.capabilities.drop, ['ALL'], c.name);
    }
    assert.ok((container.volumeMounts as { mountPath: string }[]).some((m) => m.mountPath === '/tmp'), 'tsx keeps its cache under /tmp');
  });

  it('the ConfigMap\'s configuration, joined with the Secret\'s credentials as the init container does, validates', () => {
    const mounts = new Map((init.volumeMounts as { name: string; mountPath: string }[]).map((m) => [m.name, m.mountPath]));
    const volumes = new Map((pod.spec.volumes as { name: string; configMap?: { name: string }; secret?: { secretName: string } }[]).map((v) => [v.name, v]));
    const configPath = `${mounts.get('config')}/vmcp.yaml`;
    const credentialsPath = `${mounts.get('credentials')}/secrets.yaml`;
    const joinedPath = container.args[container.args.indexOf('--config') + 1] as string;
    assert.equal(volumes.get('config')!.configMap!.name, configMap.metadata.name);
    assert.equal(volumes.get('credentials')!.secret!.secretName, secret.metadata.name);
    assert.deepEqual(init.command, ['sh', '-c', `{ cat ${configPath}; echo ---; cat ${credentialsPath}; } > ${joinedPath}`]);

    const joined = `${configMap.data['vmcp.yaml']}---\n${secret.stringData['secrets.yaml']}`;
    const result = validateVmcpText(joined, 'joined vmcp.yaml');
    assert.ok(result.ok, result.ok ? '' : formatProblems(result.problems));
    assert.equal(validateVmcpText(configMap.data['vmcp.yaml'], 'configmap').ok, false, 'without the Secret the credentials are missing');

    const { config } = result;
    assert.equal(String(config.server.admin?.port), pod.metadata.annotations['prometheus.io/port'], 'Prometheus scrapes the admin listener');
    assert.ok((container.ports as { containerPort: number }[]).some((p) => p.containerPort === config.server.admin?.port));
    const host = new URL(config.incomingAuth.resourceUrl!).hostname;
    assert.equal(host.split('.')[0], service.metadata.name, 'resourceUrl names the Service');
  });

  it('the Service sends to the pods\' named port, and the pod uses the ServiceAccount defined here', () => {
    assert.deepEqual(service.spec.selector, deployment.spec.selector.matchLabels);
    for (const [key, value] of Object.entries(service.spec.selector as Record<string, string>)) assert.equal(pod.metadata.labels[key], value);
    assert.ok((container.ports as { name: string }[]).some((p) => p.name === service.spec.ports[0].targetPort));
    assert.equal(pod.spec.serviceAccountName, one('ServiceAccount').metadata.name);
    assert.equal(init.image, container.image, 'the init container needs nothing but the gateway\'s own image');
  });
});

describe('examples/deploy/Dockerfile', () => {
  const text = readFileSync(join(DEPLOY, 'Dockerfile'), 'utf8');
  const dockerfile = DockerfileParser.parse(text);
  const instructions = dockerfile.getInstructions();
  const lastFrom = instructions.findLastIndex((i) => i.getKeyword() === 'FROM');
  const finalStage = instructions.slice(lastFrom);
  const args = (keyword: string, from = instructions): string[] => from.filter((i) => i.getKeyword() === keyword).map((i) => i.getArgumentsContent() ?? '');

  it('has no problem the Dockerfile linter finds', () => {
    const problems = lintDockerfile(text).map((d) => `${d.range.start.line + 1}: ${d.message}`);
    assert.deepEqual(problems, []);
  });

  it('builds in stages on node:20-slim and installs the runtime dependencies only', () => {
    const froms = dockerfile.getFROMs();
    assert.ok(froms.length >= 2, 'multi-stage');
    for (const from of froms) assert.equal(`${from.getImageName()}:${from.getImageTag()}`, 'node:20-slim');
    assert.ok(args('RUN').some((run) => /\bnpm ci\b.*--omit=dev/.test(run)), 'npm ci --omit=dev');
  });

  it('copies what the package ships and runs the package\'s bin as a numeric non-root user', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { files: string[]; bin: Record<string, string> };
    const copied = args('COPY', finalStage).flatMap((a) => a.split(/\s+/).slice(0, -1));
    for (const file of pkg.files.filter((f) => f !== 'README.md')) assert.ok(copied.includes(file.replace(/\/$/, '')), `${file} is copied`);
    const entrypoint = JSON.parse(args('ENTRYPOINT', finalStage)[0]!) as string[];
    assert.deepEqual(entrypoint, ['tini', '--', 'node', pkg.bin.gatehouse], 'the bin under tini, which reaps the orphans of stdio backends');
    const [user] = args('USER', finalStage);
    assert.match(user ?? '', /^[1-9]\d*(:\d+)?$/, 'a numeric user other than root');
    const ignore = readFileSync(join(DEPLOY, 'Dockerfile.dockerignore'), 'utf8');
    for (const file of ['package.json', 'package-lock.json', ...pkg.files.filter((f) => f !== 'README.md').map((f) => f.replace(/\/$/, ''))]) {
      assert.match(ignore, new RegExp(`^!${file.replace('.', '\\.')}$`, 'm'), `${file} is in the build context`);
      assert.ok(existsSync(join(REPO_ROOT, file)));
    }
  });
});
