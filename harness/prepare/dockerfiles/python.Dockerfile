# Image of one Python adapter (harness/images.py fills the build context):
#   adapter/    the adapter directory (requirements.txt pinned with ==)
#   _support/   clients/_support
#   extra-ca.pem  an extra CA bundle for pip (empty when none was given)
# The reference server is not in the image: it is mounted read-only at /mcpcm/servers/reference.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG ADAPTER
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends python3 python3-venv ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/*
COPY extra-ca.pem /usr/local/share/mcpcm/extra-ca.pem
RUN cat /usr/local/share/mcpcm/extra-ca.pem >> /etc/ssl/certs/ca-certificates.crt
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
COPY adapter/ /mcpcm/clients/${ADAPTER}/
RUN python3 -m venv /mcpcm/env \
 && if [ -f /mcpcm/clients/${ADAPTER}/requirements.txt ]; then \
      /mcpcm/env/bin/pip install -q -r /mcpcm/clients/${ADAPTER}/requirements.txt; fi
COPY _support/ /mcpcm/clients/_support/
