# The okt image: `okt run` (the operator), `okt sidecar`, and every other okt command.
#   docker build -t okt:latest .
#   docker run --rm okt:latest graph validate graphs/database.ts
# Without a Docker daemon, `npx okt image build` builds this file as it is with buildah (and stands in
# for node:24-slim when it cannot be pulled; docs/cli.md, "`okt manifests` and the Dockerfile").
# Node 24 runs okt's TypeScript sources directly (type stripping): the image runs the same code the
# tests run. The build stage compiles them with tsc, so a tree that does not type-check fails here.

FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No install scripts: the devDependency `node` (Node 24 for checkouts) then fetches no second Node,
# so the image's own Node runs the build.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY bin bin
COPY src src
COPY sidecar sidecar
COPY graphs graphs
RUN npm run build

FROM node:24-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/bin bin
COPY --from=build /app/src src
COPY --from=build /app/sidecar sidecar
COPY --from=build /app/graphs graphs
COPY crds crds
# The node image's unprivileged user (uid 1000, what the generated Deployment runs as).
USER node
EXPOSE 8081 8479
ENTRYPOINT ["node", "/app/bin/okt.js"]
CMD ["--help"]
