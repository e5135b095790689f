/**
 * The base images of a Dockerfile, as a build without --build-arg resolves them: each FROM's
 * image with `${ARG}` / `$ARG` replaced by the ARG's default, stages named earlier left out
 * (`FROM build`). Enough of the syntax for this repository's Dockerfile: no line
 * continuations inside ARG or FROM, no `${ARG:-default}` forms.
 */

/** One base image: the FROM line (1-based) and the image it names. */
export interface BaseImage {
  readonly line: number;
  readonly image: string;
}

/** `image:tag@sha256:<64 hex>` or `image@sha256:<64 hex>`. */
export const DIGEST_PINNED = /^[^\s@]+@sha256:[0-9a-f]{64}$/;

export function baseImages(dockerfile: string): BaseImage[] {
  const args = new Map<string, string>();
  const stages = new Set<string>();
  const images: BaseImage[] = [];
  const substitute = (text: string): string =>
    text.replace(
      /\$\{(\w+)\}|\$(\w+)/g,
      (_, braced?: string, bare?: string) => args.get(braced ?? bare ?? '') ?? '',
    );
  dockerfile.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    const arg = /^ARG\s+(\w+)(?:=(\S*))?$/i.exec(line);
    if (arg) {
      if (arg[2] !== undefined) args.set(arg[1] as string, arg[2].replace(/^"(.*)"$/, '$1'));
      return;
    }
    const from = /^FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(line);
    if (!from) return;
    const image = substitute(from[1] as string);
    if (!stages.has(image)) images.push({ line: i + 1, image });
    if (from[2]) stages.add(from[2]);
  });
  return images;
}
