# The Scorpion game server as a container image: `docker build -t scorpion-server .`
# Configure it with SCORPION_* variables (docs/server.md); docker-compose.yml runs
# two of these against PostgreSQL.
# The solver's compiled search is built in the full image, which has a C compiler.
FROM python:3.11 AS native
COPY engine/solver/native.c /src/native.c
RUN cc -O2 -std=c11 -shared -fPIC -o /src/_native.so /src/native.c

FROM python:3.11-slim

WORKDIR /app
# The migrations are read from the source tree, so the project is installed in place.
COPY pyproject.toml README.md alembic.ini ./
COPY engine ./engine
COPY protocol ./protocol
COPY server ./server
COPY clients ./clients
COPY --from=native /src/_native.so ./engine/solver/_native.so
RUN pip install --no-cache-dir -e . \
    && useradd --system --home-dir /app --no-create-home scorpion \
    && mkdir -p /app/data && chown scorpion /app/data

USER scorpion
ENV SCORPION_HOST=0.0.0.0 \
    SCORPION_PORT=8765 \
    SCORPION_DATA_DIR=/app/data
EXPOSE 8765
# Alive: the server answers plain HTTP on its port (readiness, /readyz, also needs the
# database). With SCORPION_CERTFILE set, probe https:// instead (docs/deploy.md, TLS).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8765/healthz', timeout=2)"]
CMD ["scorpion-server"]
