# krm-fn container image: the KRM function kustomize and kpt run as
#   docker run --rm -i --network none --user nobody ghcr.io/krm-fn/krm-fn:<tag>
# Build: docker build -t ghcr.io/krm-fn/krm-fn:0.1.0 .
# Both stages use the same exactly pinned base, so the venv's interpreter path matches.
# Argo CD targets (docs/gitops.md; deploy/argocd/); the default target stays the function image:
#   docker build --target argocd-repo-server -t <registry>/argocd-krm-fn:v3.5.3 .
#   docker build --target cmp-sidecar -t <registry>/krm-fn-cmp:0.1.0 .

FROM python:3.11.10-slim-bookworm AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

WORKDIR /src
COPY . .

# Wheels only (every dependency ships manylinux wheels): no compiler in any stage.
# pip compiles the .pyc files here, so the runtime never needs to write bytecode.
RUN python -m venv /opt/krm-fn \
    && /opt/krm-fn/bin/pip install --only-binary=:all: --no-cache-dir /src \
    && /opt/krm-fn/bin/pip uninstall --yes pip setuptools \
    && /opt/krm-fn/bin/krm-fn selfcheck


FROM python:3.11.10-slim-bookworm AS function

LABEL org.opencontainers.image.title="krm-fn" \
      org.opencontainers.image.description="KRM function: pin inference workloads to exclusive CPUs and emit the kubelet config" \
      org.opencontainers.image.licenses="Apache-2.0"

# No package tooling at run time: the function needs only the interpreter and its venv.
RUN python -m pip uninstall --yes --root-user-action=ignore pip setuptools wheel

COPY --from=builder /opt/krm-fn /opt/krm-fn

ENV PATH=/opt/krm-fn/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONSAFEPATH=1

# Orchestrators pass --user nobody anyway; 65534:65534 is nobody:nogroup on Debian.
USER 65534:65534
WORKDIR /tmp

ENTRYPOINT ["krm-fn"]


# Argo CD, way (a): repo-server image with krm-fn on PATH, for
# `kustomize.buildOptions: --enable-alpha-plugins --enable-exec` in argocd-cm.
# The Argo CD image is Ubuntu without Python, so this stage brings the function stage's
# own interpreter (/usr/local/bin/python3.11 + /usr/local/lib) and venv: the venv's
# bin/python points at /usr/local/bin/python, which must exist at the same path.
FROM quay.io/argoproj/argocd:v3.5.3 AS argocd-repo-server

USER 0
COPY --from=function /usr/local/bin/python3.11 /usr/local/bin/python3.11
COPY --from=function /usr/local/lib/ /usr/local/lib/
COPY --from=function /opt/krm-fn /opt/krm-fn
# Fails the build (exit 1, naming the module) if the copied runtime cannot import krm-fn.
RUN ln -s python3.11 /usr/local/bin/python \
    && ln -s /opt/krm-fn/bin/krm-fn /usr/local/bin/krm-fn \
    && ldconfig \
    && krm-fn selfcheck
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONSAFEPATH=1
# Argo CD's own user (ARGOCD_USER_ID in its Dockerfile).
USER 999


# Argo CD, way (b): Config Management Plugin sidecar of argocd-repo-server. The function
# image plus kustomize from the Argo CD image and the plugin config baked in at the path
# argocd-cmp-server reads. Its entrypoint, /var/run/argocd/argocd-cmp-server, comes from
# the repo-server's var-files volume (deploy/argocd/repo-server-cmp-sidecar.yaml).
FROM function AS cmp-sidecar

COPY --from=argocd-repo-server /usr/local/bin/kustomize /usr/local/bin/kustomize
COPY krm_fn/plugin_home/ /opt/krm-fn/plugin/
COPY deploy/argocd/plugin.yaml /home/argocd/cmp-server/config/plugin.yaml
# The legacy exec plugin route (a transformer without a function annotation) works too.
ENV KUSTOMIZE_PLUGIN_HOME=/opt/krm-fn/plugin
# Argo CD requires the sidecar to run as 999.
USER 999:999
WORKDIR /home/argocd
ENTRYPOINT []


# Default target (the last stage): the KRM function image.
FROM function
