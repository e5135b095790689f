/**
 * The path of a request target as express routed on it (parseurl's pathname, not decoded):
 * origin-form `/v1/observations?x=1` up to its query or fragment, or the path of an
 * absolute-form one. The endpoints that left express (functions/app, controller/observations)
 * route on it, so a path answers as it did.
 */
export function requestPath(url: string | undefined): string {
  const target = url ?? '/';
  if (target.startsWith('/')) {
    const end = target.search(/[?#]/);
    return end === -1 ? target : target.slice(0, end);
  }
  try {
    return new URL(target).pathname;
  } catch {
    return target;
  }
}
