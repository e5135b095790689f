# syntax=docker/dockerfile:1
# The one container image of npu-fault: every role, chosen by the first argument.
#
#   docker build -t npu-fault .
#   docker run --rm npu-fault controller --help
#   docker run --rm npu-fault function --help
#   docker run --rm npu-fault agent --help
#
# Multi-architecture (x86 servers, and the Kunpeng arm64 servers many Ascend nodes are):
#
#   docker buildx build --platform linux/amd64,linux/arm64 -t ghcr.io/npu-fault/npu-fault:<version> --push .
#
# Nothing in the build is architecture-specific: the output is JavaScript, and the production
# dependencies hold no native addon and no prebuilt binary (hack/image-context.test.ts checks
# both). So the build stage runs once, on the builder's own platform ($BUILDPLATFORM, no
# emulation), and each target platform's final stage takes the same dist/ and node_modules
# onto its own distroless Node.js.
#
# Two stages: the build stage installs every dependency, compiles the TypeScript (npm run
# build: tsc -p tsconfig.build.json -> dist/) and drops the development dependencies; the
# final stage is distroless Node.js 24 (no shell, no package manager), runs as uid/gid 65532
# (`nonroot`, as the manifests' runAsUser) and holds only dist/, the production node_modules
# and package.json. It runs the compiled entry point dist/cli/run.js: no TypeScript loader in
# the process, and none in the image (tsx is a development dependency, pruned with the rest).
# The context (.dockerignore, an allowlist) holds the product's sources alone: the demo's
# local stack (stack/), the benchmarks, hack/ and the tests are not in it, so neither the
# build nor the image has them (`npu-fault demo` and `bench` say so and run from a checkout).
#
# No image is built in this repository's CI (it has no container runtime). Instead
# hack/image-context.test.ts reproduces the build stage: this context, the same npm commands,
# then every role run from the result on plain Node. The manifests in k8s/ name
# ghcr.io/npu-fault/npu-fault:<version>.

# Base images pinned by digest (the multi-architecture index, so one pin serves amd64 and
# arm64): a tag can be moved to other content, a digest cannot, so a rebuild gets the same
# bases until the pins are bumped on purpose (`docker buildx imagetools inspect <image>:<tag>`
# prints the current digest; bump tag and digest together). hack/dockerfile.test.ts fails on
# a base without a digest.
# node:24.18.0-bookworm-slim
ARG BUILD_IMAGE=node:24.18.0-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d
# gcr.io/distroless/nodejs24-debian12:nonroot
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian12:nonroot@sha256:14d42e2511532589a7c7e01a753667a74fcc96266e137e8125006b87b0c32d0a

FROM --platform=$BUILDPLATFORM ${BUILD_IMAGE} AS build
WORKDIR /src
# Dependencies first, so a source change does not reinstall them. Install scripts run, as
# with `npm ci` anywhere: the devDependency `node` installs the Node 24 that the npm scripts use.
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
COPY . .
RUN npm run build \
  && find dist -name '*.d.ts' -delete \
  && npm prune --omit=dev --no-audit --no-fund

FROM ${RUNTIME_IMAGE}
WORKDIR /app
ENV NODE_ENV=production
# Owned by root and not writable by the process: the root filesystem may as well be
# read-only (the manifests mount it so, with an emptyDir at /tmp).
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
USER 65532:65532
# Distroless has no shell and no `node` on a PATH lookup of its own: name the binary.
ENTRYPOINT ["/nodejs/bin/node", "dist/cli/run.js"]
CMD ["--help"]
