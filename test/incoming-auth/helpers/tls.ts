/**
 * A throwaway certificate authority and a server certificate for 127.0.0.1 / localhost, made with
 * openssl in a temp dir (the cluster-mode tests' stand-in for the cluster CA).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCa {
  readonly dir: string;
  readonly caFile: string;
  readonly ca: string;
  readonly key: string;
  readonly cert: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('/usr/bin/openssl', args, { cwd, stdio: 'pipe' });
}

export function makeTestCa(commonName = 'gatehouse-test-cluster-ca'): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-ca-'));
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', `/CN=${commonName}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], dir);
  openssl(['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=kubernetes'], dir);
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n');
  openssl(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '1', '-extfile', 'server.ext'], dir);
  return {
    dir,
    caFile: join(dir, 'ca.crt'),
    ca: readFileSync(join(dir, 'ca.crt'), 'utf8'),
    key: readFileSync(join(dir, 'server.key'), 'utf8'),
    cert: readFileSync(join(dir, 'server.crt'), 'utf8'),
  };
}
