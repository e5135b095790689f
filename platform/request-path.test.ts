import { describe, expect, it } from '@jest/globals';
import { requestPath } from './request-path.js';

describe('requestPath', () => {
  it('routes as express did: the path without query or fragment, of origin- and absolute-form targets', () => {
    expect(requestPath('/v1/snapshots')).toBe('/v1/snapshots');
    expect(requestPath('/v1/snapshots?x=1')).toBe('/v1/snapshots');
    expect(requestPath('/v1/snapshots#x')).toBe('/v1/snapshots');
    expect(requestPath('http://host:8080/v1/snapshots?x=1')).toBe('/v1/snapshots');
    expect(requestPath('/v1/%73napshots')).toBe('/v1/%73napshots'); // not decoded
    expect(requestPath(undefined)).toBe('/');
    expect(requestPath('*')).toBe('*');
  });
});
