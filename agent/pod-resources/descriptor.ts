/**
 * The kubelet's PodResources API v1 (api.proto beside this file, vendored from k8s.io/kubelet)
 * compiled to protobuf.js's JSON descriptor, so the built agent needs no .proto file at run
 * time (the image holds compiled JavaScript only). descriptor.test.ts compiles api.proto again
 * and fails when the two differ: after a new api.proto, paste what it prints.
 */
export const PODRESOURCES_DESCRIPTOR: Record<string, unknown> = {
  nested: {
    v1: {
      options: {
        go_package: 'k8s.io/kubelet/pkg/apis/podresources/v1',
      },
      nested: {
        PodResourcesLister: {
          methods: {
            List: {
              requestType: 'ListPodResourcesRequest',
              responseType: 'ListPodResourcesResponse',
            },
            GetAllocatableResources: {
              requestType: 'AllocatableResourcesRequest',
              responseType: 'AllocatableResourcesResponse',
            },
            Get: {
              requestType: 'GetPodResourcesRequest',
              responseType: 'GetPodResourcesResponse',
            },
          },
        },
        AllocatableResourcesRequest: {
          fields: {},
        },
        AllocatableResourcesResponse: {
          fields: {
            devices: {
              rule: 'repeated',
              type: 'ContainerDevices',
              id: 1,
            },
            cpu_ids: {
              rule: 'repeated',
              type: 'int64',
              id: 2,
            },
            memory: {
              rule: 'repeated',
              type: 'ContainerMemory',
              id: 3,
            },
          },
        },
        ListPodResourcesRequest: {
          fields: {},
        },
        ListPodResourcesResponse: {
          fields: {
            pod_resources: {
              rule: 'repeated',
              type: 'PodResources',
              id: 1,
            },
          },
        },
        PodResources: {
          fields: {
            name: {
              type: 'string',
              id: 1,
            },
            namespace: {
              type: 'string',
              id: 2,
            },
            containers: {
              rule: 'repeated',
              type: 'ContainerResources',
              id: 3,
            },
            cpu_ids: {
              rule: 'repeated',
              type: 'int64',
              id: 4,
            },
            memory: {
              rule: 'repeated',
              type: 'ContainerMemory',
              id: 5,
            },
          },
        },
        ContainerResources: {
          fields: {
            name: {
              type: 'string',
              id: 1,
            },
            devices: {
              rule: 'repeated',
              type: 'ContainerDevices',
              id: 2,
            },
            cpu_ids: {
              rule: 'repeated',
              type: 'int64',
              id: 3,
            },
            memory: {
              rule: 'repeated',
              type: 'ContainerMemory',
              id: 4,
            },
            dynamic_resources: {
              rule: 'repeated',
              type: 'DynamicResource',
              id: 5,
            },
          },
        },
        ContainerMemory: {
          fields: {
            memory_type: {
              type: 'string',
              id: 1,
            },
            size: {
              type: 'uint64',
              id: 2,
            },
            topology: {
              type: 'TopologyInfo',
              id: 3,
            },
          },
        },
        ContainerDevices: {
          fields: {
            resource_name: {
              type: 'string',
              id: 1,
            },
            device_ids: {
              rule: 'repeated',
              type: 'string',
              id: 2,
            },
            topology: {
              type: 'TopologyInfo',
              id: 3,
            },
          },
        },
        TopologyInfo: {
          fields: {
            nodes: {
              rule: 'repeated',
              type: 'NUMANode',
              id: 1,
            },
          },
        },
        NUMANode: {
          fields: {
            ID: {
              type: 'int64',
              id: 1,
            },
          },
        },
        DynamicResource: {
          fields: {
            claim_name: {
              type: 'string',
              id: 2,
            },
            claim_namespace: {
              type: 'string',
              id: 3,
            },
            claim_resources: {
              rule: 'repeated',
              type: 'ClaimResource',
              id: 4,
            },
          },
        },
        ClaimResource: {
          oneofs: {
            _share_id: {
              oneof: ['share_id'],
            },
          },
          fields: {
            cdi_devices: {
              rule: 'repeated',
              type: 'CDIDevice',
              id: 1,
            },
            driver_name: {
              type: 'string',
              id: 2,
            },
            pool_name: {
              type: 'string',
              id: 3,
            },
            device_name: {
              type: 'string',
              id: 4,
            },
            share_id: {
              type: 'string',
              id: 5,
              options: {
                proto3_optional: true,
              },
            },
          },
        },
        CDIDevice: {
          fields: {
            name: {
              type: 'string',
              id: 1,
            },
          },
        },
        GetPodResourcesRequest: {
          fields: {
            pod_name: {
              type: 'string',
              id: 1,
            },
            pod_namespace: {
              type: 'string',
              id: 2,
            },
          },
        },
        GetPodResourcesResponse: {
          fields: {
            pod_resources: {
              type: 'PodResources',
              id: 1,
            },
          },
        },
      },
    },
  },
};
