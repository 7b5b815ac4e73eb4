// The Debian `kubernetes` 1.20.2 source tree, which only the bench's client-go peer (peer.ts) still
// builds in; it goes with that peer's move to Go modules.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runLogged } from './run.ts';
import { ProvisionError, type Steps } from './steps.ts';

const REFLECT2_FIXED = '/usr/share/gocode/src/github.com/modern-go/reflect2';
export const BUILD_PACKAGES = [
  'golang-1.19-go',
  'golang-github-modern-go-reflect2-dev',
  'dpkg-dev',
  'rsync',
  'jq',
  'make',
  'openssl',
];

/**
 * Debian's Go 1.19, which the Debian 1.20.2 tree was made for: named explicitly, because a machine's
 * own newer Go (1.26 at /usr/local/go) may come first on PATH and refuses that tree's old code.
 */
export const DEBIAN_GO_BIN = '/usr/lib/go-1.19/bin';

/** `env` with Debian's Go first on PATH and nothing that would make it pick another toolchain. */
export function debianGoEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { GOROOT: _goroot, GOTOOLCHAIN: _toolchain, ...rest } = env;
  return { ...rest, PATH: `${DEBIAN_GO_BIN}:${env.PATH ?? ''}` };
}

/** The Debian `kubernetes` source tree, unpacked and ready for Go 1.19, in a GOPATH layout. */
export interface KubernetesSource {
  /** The unpacked tree. */
  sourceDir: string;
  /** Its upstream version (`1.20.2`). */
  upstream: string;
  /** The GOPATH whose src/k8s.io/kubernetes is the tree. */
  gopath: string;
  /** $GOPATH/src/k8s.io/kubernetes (a symlink to the tree): build from there. */
  linked: string;
}

/**
 * Fetch Debian's `kubernetes` source package into `buildDir` (emptied first), unpack it, fix its
 * vendored reflect2 for Go >= 1.18, and lay it out at $GOPATH/src/k8s.io/kubernetes as Debian's own
 * rules do (the tree builds in GOPATH mode: its hack/ scripts set GO111MODULE=off). Every build from
 * this source (kube-apiserver and the node's binaries here, the bench's client-go peer in peer.ts)
 * fetches it this way; the caller removes `buildDir` when done. Three steps.
 */
export async function fetchKubernetesSource(buildDir: string, steps: Steps, logPath: string): Promise<KubernetesSource> {
  rmSync(buildDir, { recursive: true, force: true });
  mkdirSync(buildDir, { recursive: true });
  const sourceDir = join(buildDir, 'kubernetes');

  await steps.run('downloading the Debian source package `kubernetes` (~34 MB)', () =>
    runLogged('apt-get', ['source', '--download-only', 'kubernetes'], { cwd: buildDir, logPath }),
  );
  const dsc = readdirSync(buildDir).find((f) => f.startsWith('kubernetes_') && f.endsWith('.dsc'));
  if (!dsc) throw new ProvisionError(`apt-get source did not leave a kubernetes_*.dsc in ${buildDir}`);
  const upstream = upstreamVersion(dsc);

  await steps.run(`unpacking kubernetes ${upstream}`, () =>
    runLogged('dpkg-source', ['--no-check', '-x', dsc, 'kubernetes'], { cwd: buildDir, logPath }),
  );
  await steps.run('replacing vendored modern-go/reflect2 (crashes under Go >= 1.18) with Debian\'s 1.0.2', async () =>
    replaceReflect2(sourceDir),
  );

  // The Makefile generates code (openapi, deepcopy) that a bare `go build` lacks; it wants the tree at
  // $GOPATH/src/k8s.io/kubernetes, as Debian's own rules arrange.
  const gopath = join(buildDir, 'gopath');
  mkdirSync(join(gopath, 'src', 'k8s.io'), { recursive: true });
  const linked = join(gopath, 'src', 'k8s.io', 'kubernetes');
  symlinkSync(sourceDir, linked);
  return { sourceDir, upstream, gopath, linked };
}

/** `kubernetes_1.20.5+really1.20.2-1.1+deb12u1.dsc` -> `1.20.2`. */
export function upstreamVersion(dscName: string): string {
  const version = dscName.replace(/^kubernetes_/, '').replace(/\.dsc$/, '');
  const upstream = version.replace(/^\d+:/, '').replace(/-[^-]+$/, '');
  return upstream.includes('really') ? upstream.slice(upstream.lastIndexOf('really') + 'really'.length) : upstream;
}

function replaceReflect2(sourceDir: string): void {
  const vendored = join(sourceDir, 'vendor', 'github.com', 'modern-go', 'reflect2');
  if (!existsSync(REFLECT2_FIXED)) throw new ProvisionError(`${REFLECT2_FIXED} is missing (package golang-github-modern-go-reflect2-dev)`);
  if (!existsSync(vendored)) throw new ProvisionError(`${vendored} is missing in the kubernetes source`);
  const isSource = (f: string) => (f.endsWith('.go') || f.endsWith('.s')) && !f.endsWith('_test.go');
  for (const f of readdirSync(vendored).filter(isSource)) rmSync(join(vendored, f));
  for (const f of readdirSync(REFLECT2_FIXED).filter(isSource)) copyFileSync(join(REFLECT2_FIXED, f), join(vendored, f));
}


const SOURCES_DIR = '/etc/apt/sources.list.d';
const OKT_SOURCES = join(SOURCES_DIR, 'okt-deb-src.sources');
const OKT_LIST = join(SOURCES_DIR, 'okt-deb-src.list');

/**
 * Unless some deb-src entry exists, add ones mirroring the existing deb entries, in okt's own files
 * (the system's files stay as they are).
 */
export function enableDebSrc(): void {
  const files = [
    ...(existsSync('/etc/apt/sources.list') ? ['/etc/apt/sources.list'] : []),
    ...(existsSync(SOURCES_DIR) ? readdirSync(SOURCES_DIR).map((f) => join(SOURCES_DIR, f)) : []),
  ];
  const deb822: string[] = [];
  const oneLine: string[] = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    if (file.endsWith('.sources')) {
      for (const stanza of text.split(/\n\s*\n/)) {
        const types = /^Types:(.*)$/m.exec(stanza)?.[1]?.trim().split(/\s+/) ?? [];
        if (types.includes('deb-src')) return;
        if (types.includes('deb')) deb822.push(stanza.replace(/^Types:.*$/m, 'Types: deb-src').trim());
      }
    } else if (file.endsWith('.list') || file === '/etc/apt/sources.list') {
      for (const line of text.split('\n')) {
        if (/^\s*deb-src\s/.test(line)) return;
        if (/^\s*deb\s/.test(line)) oneLine.push(line.replace(/^\s*deb\s/, 'deb-src '));
      }
    }
  }
  if (deb822.length === 0 && oneLine.length === 0) {
    throw new ProvisionError('no apt sources found to mirror as deb-src; enable deb-src by hand and retry');
  }
  const header = '# Added by okt (npx okt cluster provision): source packages, to build kube-apiserver.\n';
  if (deb822.length > 0) writeFileSync(OKT_SOURCES, header + deb822.join('\n\n') + '\n');
  if (oneLine.length > 0) writeFileSync(OKT_LIST, header + oneLine.join('\n') + '\n');
}

