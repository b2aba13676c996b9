# The image compose.yaml runs: `wld bridge` with every channel, the model providers and the
# PostgreSQL driver, as an unprivileged user, its state in the /var/lib/wld volume.
# tests/test_deploy.py runs this CMD, ENV and HEALTHCHECK against real processes (docs/deploy.md).
FROM python:3.11-slim-bookworm

# git: Plans are executed in a git worktree of the project
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*

RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/wld --shell /usr/sbin/nologin wld \
    && install -d -o wld -g wld -m 0750 /var/lib/wld

WORKDIR /opt/runwield-bridge
COPY pyproject.toml README.md ./
COPY runwield_bridge ./runwield_bridge
RUN pip install --no-cache-dir '.[telegram,slack,discord,providers,postgres]'

COPY deploy/wld.toml /etc/wld/wld.toml
ENV WLD_HOME=/var/lib/wld \
    WLD_CONFIG=/etc/wld/wld.toml \
    WLD_LISTEN=0.0.0.0:8787 \
    PYTHONUNBUFFERED=1

USER wld
WORKDIR /var/lib/wld
VOLUME /var/lib/wld
EXPOSE 8787

# /healthz is served by the web server, which `wld bridge` starts when a channel takes webhooks
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; port = os.environ['WLD_LISTEN'].rpartition(':')[2]; urllib.request.urlopen(f'http://127.0.0.1:{port}/healthz', timeout=4)"]

CMD ["wld", "bridge"]
