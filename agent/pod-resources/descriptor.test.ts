import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
// protobuf.js is what @grpc/proto-loader compiles .proto files with (its dependency).
import protobuf from 'protobufjs';
import { PODRESOURCES_DESCRIPTOR } from './descriptor.js';

describe('the vendored PodResources proto', () => {
  it('compiles to exactly descriptor.ts (field names kept as in the proto)', () => {
    const source = readFileSync(new URL('./api.proto', import.meta.url), 'utf8');
    const compiled = protobuf.parse(source, { keepCase: true }).root.toJSON();
    expect(PODRESOURCES_DESCRIPTOR).toEqual(JSON.parse(JSON.stringify(compiled)));
  });

  it('is the kubelet’s v1 API with its source named', () => {
    const source = readFileSync(new URL('./api.proto', import.meta.url), 'utf8');
    expect(source).toContain('service PodResourcesLister');
    expect(source).toContain('rpc List(ListPodResourcesRequest) returns (ListPodResourcesResponse) {}');
    expect(source).toMatch(
      /kubernetes\/kubelet.*\n.*pkg\/apis\/podresources\/v1\/api\.proto at commit [0-9a-f]{40}/,
    );
    expect(source).toContain('Apache License');
  });
});
