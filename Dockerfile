# The Scorpion game server as a container image: `docker build -t scorpion-server .`
# Configure it with SCORPION_* variables (docs/server.md); docker-compose.yml runs
# two of these against PostgreSQL.
# The web client (clients/web), built once; the wheel ships it in server/web/.
# It sits where it does in the checkout, /src/clients/web, beside what its sources
# import from outside it (src/checks.ts: ../../../protocol/schema.json).
FROM node:20-slim AS web
WORKDIR /src/clients/web
COPY clients/web/package.json clients/web/package-lock.json ./
RUN PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
COPY protocol/schema.json /src/protocol/schema.json
COPY clients/web ./
RUN npx vite build --outDir /src/dist --emptyOutDir

# The wheel is built in the full image, which has a C compiler, so it carries the
# solver's compiled search (SCORPION_REQUIRE_NATIVE=1: no wheel without it) and the
# built web client; the slim image installs that wheel, with the server extra (uvloop)
# and the pinned versions, as any host would.
FROM python:3.11 AS wheel
WORKDIR /src
COPY . .
COPY --from=web /src/dist ./server/web
RUN SCORPION_REQUIRE_NATIVE=1 pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim

WORKDIR /app
COPY constraints.txt /tmp/constraints.txt
COPY --from=wheel /wheels /tmp/wheels
RUN pip install --no-cache-dir -c /tmp/constraints.txt "$(ls /tmp/wheels/*.whl)[server]" \
    && rm -rf /tmp/wheels /tmp/constraints.txt \
    && useradd --system --home-dir /app --no-create-home scorpion \
    && mkdir -p /app/data && chown scorpion /app/data

USER scorpion
ENV SCORPION_HOST=0.0.0.0 \
    SCORPION_PORT=8765 \
    SCORPION_DATA_DIR=/app/data
EXPOSE 8765
# Alive: the server answers /healthz where SCORPION_HOST, SCORPION_PORT and
# SCORPION_CERTFILE say it listens (readiness, /readyz, also needs the database).
COPY deploy/healthcheck.py /app/healthcheck.py
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "/app/healthcheck.py"]
CMD ["scorpion-server"]
