import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ctr } from './ctr.ts';

/** The sandbox image of every Pod: Kubernetes' own pause program, compiled at provisioning. */
export const PAUSE_IMAGE = 'okt.local/pause:3.4';

/**
 * Import the pause image into the node's containerd, unless it is there already. One static binary
 * needs no image builder: an OCI image layout (one layer, a config, a manifest) written here.
 */
export function importPauseImage(socket: string, pauseBinary: string): void {
  if (ctr(socket, ['images', 'list', '--quiet']).split('\n').includes(PAUSE_IMAGE)) return;
  const work = mkdtempSync(join(tmpdir(), 'okt-pause-'));
  try {
    const archive = writePauseArchive(work, pauseBinary);
    ctr(socket, ['images', 'import', archive]);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function writePauseArchive(work: string, pauseBinary: string): string {
  const rootfs = join(work, 'rootfs');
  mkdirSync(rootfs);
  copyFileSync(pauseBinary, join(rootfs, 'pause'));
  chmodSync(join(rootfs, 'pause'), 0o755);
  const layout = join(work, 'layout');
  const blobs = join(layout, 'blobs', 'sha256');
  mkdirSync(blobs, { recursive: true });
  const layerPath = join(work, 'layer.tar');
  execFileSync('tar', ['--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '-C', rootfs, '-cf', layerPath, 'pause']);
  const blob = (content: Buffer) => {
    const digest = createHash('sha256').update(content).digest('hex');
    writeFileSync(join(blobs, digest), content);
    return { digest: `sha256:${digest}`, size: content.length };
  };
  const layer = blob(readFileSync(layerPath));
  const config = blob(
    Buffer.from(
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        config: { User: '65535:65535', Entrypoint: ['/pause'] },
        rootfs: { type: 'layers', diff_ids: [layer.digest] },
      }),
    ),
  );
  const manifest = blob(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layer }],
      }),
    ),
  );
  writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  writeFileSync(
    join(layout, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          ...manifest,
          annotations: { 'io.containerd.image.name': PAUSE_IMAGE, 'org.opencontainers.image.ref.name': '3.4' },
        },
      ],
    }),
  );
  const archive = join(work, 'pause.tar');
  execFileSync('tar', ['-C', layout, '-cf', archive, '.']);
  return archive;
}
