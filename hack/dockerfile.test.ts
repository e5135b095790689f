import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DIGEST_PINNED, baseImages } from './dockerfile.js';

const DOCKERFILE = readFileSync(fileURLToPath(new URL('../Dockerfile', import.meta.url)), 'utf8');

describe('the Dockerfile', () => {
  it('pins every base image by digest (a tag can be moved to other content; a digest cannot)', () => {
    const images = baseImages(DOCKERFILE);
    expect(images.map((base) => base.image)).toEqual([
      expect.stringMatching(/^node:24[.\d]*-bookworm-slim@/),
      expect.stringMatching(/^gcr\.io\/distroless\/nodejs24-debian12:nonroot@/),
    ]);
    const unpinned = images.filter((base) => !DIGEST_PINNED.test(base.image));
    expect(unpinned).toEqual([]);
  });
});

describe('baseImages', () => {
  it('resolves ARG defaults, leaves earlier stages out, and tells a tag from a digest', () => {
    const images = baseImages(
      [
        'ARG BASE=node:24-bookworm-slim',
        `ARG RUNTIME="gcr.io/distroless/nodejs24-debian12@sha256:${'a'.repeat(64)}"`,
        'FROM ${BASE} AS build',
        'FROM build AS test',
        'FROM --platform=linux/amd64 $RUNTIME',
        'FROM busybox:1.37',
      ].join('\n'),
    );
    expect(images).toEqual([
      { line: 3, image: 'node:24-bookworm-slim' },
      { line: 5, image: `gcr.io/distroless/nodejs24-debian12@sha256:${'a'.repeat(64)}` },
      { line: 6, image: 'busybox:1.37' },
    ]);
    expect(images.map((base) => DIGEST_PINNED.test(base.image))).toEqual([false, true, false]);
    expect(DIGEST_PINNED.test(`node:24@sha256:${'A'.repeat(64)}`)).toBe(false);
    expect(DIGEST_PINNED.test(`node:24@sha256:${'a'.repeat(63)}`)).toBe(false);
  });
});
