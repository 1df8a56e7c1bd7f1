# krm-fn container image: the KRM function kustomize and kpt run as
#   docker run --rm -i --network none --user nobody ghcr.io/krm-fn/krm-fn:<tag>
# Build: docker build -t ghcr.io/krm-fn/krm-fn:0.1.0 .
# Both stages use the same exactly pinned base, so the venv's interpreter path matches.

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
    && /opt/krm-fn/bin/krm-fn --version


FROM python:3.11.10-slim-bookworm

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
