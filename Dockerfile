# syntax=docker/dockerfile:1
# The ingressctl image: Debian's NGINX and CPython from one Debian release, the controller in a venv, running as
# uid 101 with NGINX (and only NGINX) allowed to bind ports 80 and 443.
#
#   docker build -t ingressctl:0.1.0 .
#
# Both stages use the same base so the wheels built in the first one match the interpreter of the second.
# Pin the base by digest in release builds: --build-arg BASE_IMAGE=python:3.11-slim-bookworm@sha256:...
ARG BASE_IMAGE=python:3.11-slim-bookworm

# ---------------------------------------------------------------------------------------------------- builder
FROM ${BASE_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY ingressctl ./ingressctl
# A wheel of ingressctl (templates included as package data) and wheels of all its dependencies.
RUN python -m pip wheel --wheel-dir /wheels .

# ------------------------------------------------------------------------------------------- nginx-module
# ingressctl's NGINX modules (nginx-module/: endpoint changes without reloads, faster loads of many upstreams,
# certificates loaded at TLS handshakes parsed once per worker), built against the headers of the same Debian
# NGINX the runtime stage installs (build-nginx-module.sh checks the versions match).
FROM ${BASE_IMAGE} AS nginx-module
WORKDIR /src
RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends nginx nginx-dev gcc make libc6-dev; \
    rm -rf /var/lib/apt/lists/*
COPY scripts/build-nginx-module.sh ./scripts/
COPY nginx-module ./nginx-module
RUN bash scripts/build-nginx-module.sh --modules-dir /out

# ---------------------------------------------------------------------------------------------------- runtime
FROM ${BASE_IMAGE}
ENV PATH=/opt/ingressctl/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

# The user first, so that no package can take uid 101. Files it writes are group 0 with g=u, for platforms
# that run containers with an arbitrary uid in group 0.
RUN groupadd --system --gid 101 nginx \
 && useradd --system --uid 101 --gid 101 --home-dir /var/cache/nginx --no-create-home --shell /usr/sbin/nologin \
      nginx

# NGINX from Debian (stub_status built in; its stream module for TransportServers) and tini as PID 1: it
# forwards signals to the controller and reaps orphaned NGINX processes, which the controller does not do.
# libcap2-bin is needed only for setcap: the file capability lets the non-root NGINX master bind 80/443; the
# Python interpreter gets no capability.
RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends nginx libnginx-mod-stream tini libcap2-bin; \
    setcap cap_net_bind_service=+ep /usr/sbin/nginx; \
    setcap -v cap_net_bind_service=+ep /usr/sbin/nginx; \
    apt-get purge -y --auto-remove libcap2-bin; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb

# The modules and their stamps (the NGINX version each was built for: the controller loads a module only
# with a matching stamp), where the controller looks for them (NGINX's modules path).
COPY --from=nginx-module /out/ /usr/lib/nginx/modules/

# The directories the controller and NGINX write: --nginx-conf-dir (nginx.conf, conf.d/, secrets/),
# --nginx-run-dir (sockets, pid, temp paths), and NGINX's compiled-in log and cache directories.
RUN set -eux; \
    rm -rf /etc/nginx/conf.d /etc/nginx/sites-enabled /etc/nginx/sites-available /etc/nginx/secrets; \
    mkdir -p /etc/nginx/conf.d /etc/nginx/secrets /var/lib/nginx /var/cache/nginx /var/log/nginx; \
    chown -R 101:0 /etc/nginx /var/lib/nginx /var/cache/nginx /var/log/nginx; \
    chmod -R g=u /etc/nginx /var/lib/nginx /var/cache/nginx /var/log/nginx; \
    chmod 0700 /etc/nginx/secrets

# Install the wheels into a venv without copying them into a layer; no compiler, no pip cache.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    python -m venv /opt/ingressctl \
 && /opt/ingressctl/bin/pip install --no-cache-dir --no-index --find-links=/wheels ingressctl \
 && /opt/ingressctl/bin/pip uninstall -y pip \
 && ingressctl --version

USER 101
WORKDIR /var/lib/nginx
# HTTP, HTTPS, /nginx-ready and /healthz, /metrics.
EXPOSE 80 443 8081 9113
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--", "ingressctl"]
